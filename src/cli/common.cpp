#include "cli/common.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

#include "eval/protocol.hpp"
#include "eval/verdict.hpp"
#include "gen/models.hpp"
#include "io/text.hpp"
#include "io/toml_reader.hpp"
#include "launch/phases.hpp"
#include "launch/subprocess.hpp"
#include "ref/registry.hpp"

namespace pkb::cli {

using json = nlohmann::json;

void warn(const std::string& msg) { spdlog::warn("{}", msg); }

std::chrono::steady_clock::time_point process_start() {
  static const auto t = std::chrono::steady_clock::now();
  return t;
}

const spec::Registry& Globals::registry() {
  if (!registry_) {
    for (auto& lib : reference_libs) {
      try {
        ref::load_reference_library(lib);
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
    }
    std::vector<std::string> dirs = {root + "/problems"};
    dirs.insert(dirs.end(), problem_dirs.begin(), problem_dirs.end());
    try {
      registry_ = spec::Registry::load(dirs, ref::reference_slugs());
    } catch (const spec::SpecError& e) {
      throw UsageError(e.what());
    }
  }
  return *registry_;
}

const spec::ProblemSpec& Globals::problem(const std::string& key) {
  try {
    return registry().find(key);
  } catch (const spec::SpecError& e) {
    throw UsageError(e.what());
  }
}

const char* const kSizeHelp =
    "size: default, large, ..., or with sizes replaced: large:M=4096,N=512 or M=4096 (on default)";

void check_size(const spec::ProblemSpec& s, const std::string& size) {
  try {
    s.size_values(size);
  } catch (const spec::SpecError& e) {
    throw UsageError(e.what());
  }
}

CLI::Option* add_model_option(CLI::App* cmd, std::vector<std::string>& models) {
  return cmd->add_option("-m,--model", models, "a models.toml entry or provider:model-id (repeatable)")
      ->required()
      ->delimiter(',');
}

CLI::Option* add_problem_option(CLI::App* cmd, std::vector<std::string>& problems) {
  return cmd->add_option("-p,--problem", problems, "'all', category keys (coll, tp, ...), slugs, ids or stems, comma-separated")
      ->delimiter(',');
}

void RunOptions::add_to(CLI::App* app) {
  app->add_option("--device", place.device, "cuda, cpu, or auto (CUDA when a GPU is visible)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  app->add_option("-w,--world-size", place.world, "ranks (default: visible GPUs; 4 on the CPU device)")
      ->check(CLI::Range(1, 1024));
  app->add_option("--ranks-per-gpu", place.ranks_per_gpu, "ranks sharing each GPU (timings then mean nothing)")
      ->check(CLI::Range(1, 64));
  app->add_option("--timeout", timeout, "seconds allowed per phase (init, each trial, timing)")
      ->check(CLI::PositiveNumber);
  app->add_flag("--echo", echo, "print every rank's output as it comes");
  app->add_flag("--multicast", place.multicast, "allow NVLink multicast (NVLS) in NCCL; off by default");
  app->add_flag("--no-mps", place.no_mps, "do not start a private MPS daemon when ranks share a GPU");
  app->add_option("--ref-comm", place.ref_comm,
                  "the references' communicator where ranks do not each have a GPU: shm (shared memory; the "
                  "default where ranks share a GPU) or gloo (the CPU device's default); NCCL with a GPU per rank")
      ->check(CLI::IsMember({"auto", "shm", "gloo"}));
  app->add_flag("--no-sandbox", no_sandbox,
                "run candidates unconfined: every environment variable, any file, the network (debugging only)");
  app->add_option("--pass-env", pass_env, "an environment variable ranks keep although it looks secret (repeatable)");
}

const spec::HardwareProfile* hardware_for(Globals& g, const std::string& wanted, const launch::Placement& p,
                                          std::vector<spec::HardwareProfile>& store) {
  store = spec::load_profiles(g.root + "/hardware/profiles.toml");
  if (wanted != "auto") {
    auto* hw = spec::find_profile(store, wanted);
    if (!hw) throw UsageError("no hardware profile '" + wanted + "' in hardware/profiles.toml");
    return hw;
  }
  return spec::pick_profile(store, p.device == "cpu" ? "cpu" : p.gpu_name, p.gpus);
}

namespace {

// MemAvailable of /proc/meminfo, in bytes (0 when unknown).
uint64_t host_memory_available() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (f >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib << 10;
  return 0;
}

}  // namespace

PlanInputs plan_inputs(const launch::Placement& p, double limit_gib, const json& cached_timing) {
  PlanInputs in;
  if (limit_gib > 0) {
    in.memory = static_cast<uint64_t>(limit_gib * double(uint64_t{1} << 30));
  } else if (p.device == "cuda") {
    for (int g = 0; g < p.gpus; ++g) {
      uint64_t m = static_cast<uint64_t>(p.probe["devices"][g].value("memory_bytes", 0.0));
      if (m && (!in.memory || m < in.memory)) in.memory = m;
    }
  } else {
    in.memory = host_memory_available();
  }
  if (cached_timing.is_object()) in.reference_peak = static_cast<uint64_t>(cached_timing.value("peak_bytes", 0.0));
  return in;
}

launch::Placement place(const RunOptions& o, const spec::ProblemSpec* spec, const std::string& size) {
  launch::Placement p = launch::place(o.place, spec, size);
  for (auto& w : p.warnings) warn(w);
  return p;
}

namespace {

// The key variables models.toml names: never into a rank, whatever they are called.
std::vector<std::string> key_variables(const Globals& g) {
  std::vector<std::string> names;
  try {
    names = gen::ModelTable::load(g.root + "/models.toml").key_variables();
  } catch (const std::exception&) {  // no or a broken models.toml: the name rules still hold
  }
  return names;
}

}  // namespace

launch::GroupReport run_ranks(Globals& g, const launch::Placement& p, const RunOptions& o, const rank::Job& job,
                              const spec::ProblemSpec* spec, const std::string& label, bool judged) {
  namespace proto = eval::protocol;
  const int w = p.world;
  auto role = [&](int q) {
    return !judged ? rank::Role::single : q < w ? rank::Role::judge : rank::Role::candidate;
  };
  launch::GroupOptions opts;
  opts.world = judged ? 2 * w : w;
  if (judged) {
    opts.name_of = [&](int q) {
      return std::string(q < w ? "judge rank " : "rank ") + std::to_string(q % w);
    };
    opts.may_write = [&](int q, const std::string& key) {
      return key.rfind(q < w ? proto::kJudges : proto::kCandidates, 0) == 0;
    };
    opts.timestamp_key = [](const std::string& key) { return proto::is_message(key); };
  }
  opts.argv = {launch::self_exe(), "__worker"};
  opts.env = p.env;
  opts.env_policy.isolate = !o.no_sandbox;
  opts.env_policy.pass = o.pass_env;
  opts.env_policy.deny = key_variables(g);
  opts.budgets = launch::phase_budgets(spec, job.size, p, o.timeout);
  opts.echo = o.echo;
  opts.job = [&](int q) {
    rank::Job j = job;
    j.role = role(q);
    j.rank = q % w;
    j.world = w;
    j.device = p.device;
    j.gpu = p.gpu_of(q % w);
    j.comm = p.comm;
    j.reference_libs = g.reference_libs;
    j.sandbox = job.sandbox && !o.no_sandbox;
    // The seed stays with the judges: a candidate rank never needs it.
    if (j.role == rank::Role::candidate) j.seed = 0;
    return rank::to_json(j).dump();
  };
  bool tty = isatty(2) && !o.echo;
  int shown = -1;
  int watched = judged ? w : 0;  // the progress of (candidate) rank 0
  opts.on_phase = [&](int r, const std::string& phase, int trial) {
    if (!tty || r != watched) return;
    if (phase == launch::phase::kTrial && trial != shown) {
      shown = trial;
      fprintf(stderr, "\r\033[K%s  trial %d/%d", label.c_str(), trial + 1, job.trials);
    } else if (phase != launch::phase::kTrial) {
      fprintf(stderr, "\r\033[K%s  %s", label.c_str(), phase.c_str());
    }
  };
  launch::GroupReport r = launch::run_group(opts);
  if (tty) fprintf(stderr, "\r\033[K");
  return r;
}

int exit_for(const launch::GroupReport& r) {
  switch (r.outcome) {
    case launch::Outcome::Ok: return eval::kOk;
    case launch::Outcome::Crash: return eval::kCrash;
    case launch::Outcome::Timeout: return eval::kTimeout;
    case launch::Outcome::Interrupted: return eval::kInterrupted;
  }
  return eval::kInternal;
}

namespace {

// The names a command takes: its flags (--long, -s) or its subcommands.
std::vector<std::string> flag_names(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (const CLI::App* at = cmd; at; at = at->get_parent())  // a command also takes its parents' flags
    for (const CLI::Option* opt : at->get_options()) {
      for (auto& l : opt->get_lnames()) names.push_back("--" + l);
      for (auto& s : opt->get_snames()) names.push_back("-" + s);
    }
  return names;
}

std::string command_path(const CLI::App* cmd) {
  std::string path;
  for (const CLI::App* at = cmd; at; at = at->get_parent())
    path = (at->get_parent() ? at->get_name() : std::string("pkb")) + (path.empty() ? "" : " " + path);
  return path;
}

bool has_command(const CLI::App& app, const std::string& word) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->check_name(word)) return true;
  return false;
}

// The first word of argv that is not a global flag (or its value): the command's name.
std::string command_word(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.empty() || a[0] != '-') return a;
    std::string name = a.substr(0, a.find('='));
    if (a.find('=') != std::string::npos) continue;
    for (const CLI::Option* opt : app.get_options())
      if (opt->check_name(name) && opt->get_type_size() != 0) ++i;  // skips the flag's value
  }
  return "";
}

}  // namespace

int explain_parse_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (e.get_exit_code() == 0) return app.exit(e);
  const CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
  if (cmd == &app) {
    std::string word = command_word(app, argc, argv);
    if (!word.empty() && !has_command(app, word)) {
      std::vector<std::string> names;
      std::string list;
      for (const CLI::App* sub : static_cast<const CLI::App&>(app).get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->get_name().empty() || sub->get_group().empty()) continue;
        names.push_back(sub->get_name());
        list += (list.empty() ? "" : ", ") + sub->get_name();
      }
      std::string near = io::nearest(word, names);
      fprintf(stderr, "pkb: error: unknown command '%s'%s; the commands are %s\n", word.c_str(),
              near.empty() ? "" : (" (did you mean " + near + "?)").c_str(), list.c_str());
      return eval::kUsage;
    }
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    // CLI11 lists the unexpected arguments in reverse; a flag among them is the mistake.
    std::string what = e.what();
    std::vector<std::string> extras;
    std::stringstream words(what.substr(what.find(':') + 1));
    for (std::string w; words >> w;) extras.insert(extras.begin(), w);
    for (auto& x : extras) {
      if (x.size() < 2 || x[0] != '-') continue;
      std::string flag = x.substr(0, x.find('='));
      std::string near = io::nearest(flag, flag_names(cmd));
      fprintf(stderr, "pkb: error: unknown flag %s for %s; %s\n", flag.c_str(), command_path(cmd).c_str(),
              near.empty() ? (command_path(cmd) + " --help lists them").c_str() : ("did you mean " + near + "?").c_str());
      return eval::kUsage;
    }
    if (!extras.empty()) {
      fprintf(stderr, "pkb: error: unexpected argument '%s' for %s; %s --help says what it takes\n",
              extras.front().c_str(), command_path(cmd).c_str(), command_path(cmd).c_str());
      return eval::kUsage;
    }
  }
  // Anything else (a missing value, a value out of range): CLI11's words, on one line.
  fprintf(stderr, "pkb: error: %s; %s --help says what each flag takes\n", e.what(), command_path(cmd).c_str());
  return eval::kUsage;
}

uint64_t make_seed(const std::string& given) {
  if (!given.empty()) {
    try {
      size_t used = 0;
      uint64_t s = std::stoull(given, &used, 0);
      if (used == given.size()) return s;
    } catch (...) {
    }
    throw UsageError("--seed takes a whole number, not '" + given + "'");
  }
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace pkb::cli
