#include "cli/common.hpp"

#include <spdlog/spdlog.h>

#include <cctype>
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

CLI::Validator dtype_spellings() {
  return CLI::Validator(
      [](std::string& value) {
        static const std::map<std::string, std::string> spelled = {
            {"bfloat16", "bf16"},         {"float16", "fp16"},        {"float32", "fp32"},
            {"float64", "fp64"},          {"float8_e4m3fn", "fp8_e4m3"}, {"float8_e5m2", "fp8_e5m2"},
            {"torch.bfloat16", "bf16"},   {"torch.float16", "fp16"},  {"torch.float32", "fp32"}};
        auto it = spelled.find(value);
        if (it != spelled.end()) value = it->second;
        return std::string();
      },
      "");
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
  app->add_option("-w,--world-size", place.world,
                  "ranks (default: visible GPUs; 4 on the CPU device); not nccl-tests' warm-up, which is --warmup")
      ->check(CLI::Range(1, 1024));
  // The original ParallelKernelBench's (and torchrun's) spellings of the same thing; hidden.
  app->add_option("--nproc-per-node,--num-gpus", place.world, "-w,--world-size")->check(CLI::Range(1, 1024))->group("");
  app->add_option("--ranks-per-gpu", place.ranks_per_gpu, "ranks sharing each GPU (timings then mean nothing)")
      ->check(CLI::Range(1, 64));
  app->add_option("--timeout", timeout, "seconds allowed per phase (init, each trial, timing)")
      ->check(CLI::PositiveNumber);
  app->add_flag("--echo", echo, "print every rank's output as it comes");
  app->add_flag("--multicast", place.multicast, "allow NVLink multicast (NVLS) in NCCL; off by default");
  app->add_flag("--no-mps", place.no_mps, "do not start a private MPS daemon when ranks share a GPU");
  app->add_flag("--mps", place.mps,
                "start a private MPS daemon even where each rank has a GPU of its own (pkb eval's judge and "
                "candidate rank beside it then share one GPU context)");
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
    if (!hw) throw UsageError(spec::unknown_profile_message(store, wanted) + ", or auto");
    return hw;
  }
  return spec::pick_profile(store, p.device == launch::Device::cpu ? "cpu" : p.gpu_name, p.gpus);
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
  } else if (p.device == launch::Device::cuda) {
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

launch::Placement place_all(const RunOptions& o, std::vector<const spec::ProblemSpec*>& todo, const std::string& size,
                            const spec::ProblemSpec*& slowest, bool skip_unfit) {
  launch::Placement p = place(o, todo.size() == 1 && !skip_unfit ? todo.front() : nullptr, size);
  std::string refused;
  std::vector<const spec::ProblemSpec*> fit;
  for (auto* s : todo) {
    std::string err = s->world_size_error(p.world, size);
    if (err.empty()) fit.push_back(s);
    else if (skip_unfit) printf("%-44s skipped: %s\n", s->slug.c_str(), err.c_str());
    else refused += (refused.empty() ? "" : ", ") + s->slug;
  }
  if (!refused.empty() || fit.empty())
    throw UsageError("W=" + std::to_string(p.world) + " does not fit " + (refused.empty() ? "any of them" : refused) +
                     " (pkb list gives the world sizes each takes); leave them out or pick another --world-size");
  todo = fit;
  slowest = todo.front();
  for (auto* s : todo)
    if (s->trial_timeout_s > slowest->trial_timeout_s) slowest = s;
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

// The names a command takes, long (--name) and short (-n) apart: its flags and its parents'.
struct FlagNames {
  std::vector<std::string> longs, shorts;
};

FlagNames flag_names(const CLI::App* cmd) {
  FlagNames names;
  for (const CLI::App* at = cmd; at; at = at->get_parent())  // a command also takes its parents' flags
    for (const CLI::Option* opt : at->get_options()) {
      if (opt->get_group().empty()) continue;  // hidden spellings are never suggested
      for (auto& l : opt->get_lnames()) names.longs.push_back(l);
      for (auto& s : opt->get_snames()) names.shorts.push_back(s);
    }
  return names;
}

// The flag a mistyped one most likely meant, "" when none is near. A long flag is compared
// with long flags only (never "-h" for "--m"): by edit distance, else the shortest one it
// begins ("--m": --model). A one-letter flag only matches the same letter in the other case.
std::string nearest_flag(const std::string& typed, const FlagNames& names) {
  std::string bare = typed.substr(typed.find_first_not_of('-'));
  if (bare.empty()) return "";
  if (typed.rfind("--", 0) != 0 && bare.size() == 1) {
    for (auto& s : names.shorts)
      if (s.size() == 1 && std::tolower(s[0]) == std::tolower(bare[0])) return "-" + s;
    return "";
  }
  std::string near = io::nearest(bare, names.longs);
  if (!near.empty()) return "--" + near;
  std::string best;
  for (auto& l : names.longs)
    if (l.rfind(bare, 0) == 0 && (best.empty() || l.size() < best.size())) best = l;
  return best.empty() ? "" : "--" + best;
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

// "0.000000" -> "0", "2.500000" -> "2.5".
std::string trimmed_number(std::string n) {
  if (n.find('.') == std::string::npos) return n;
  while (!n.empty() && n.back() == '0') n.pop_back();
  if (!n.empty() && n.back() == '.') n.pop_back();
  return n;
}

// CLI11's "--timeout: Value 0 not in range 0.000000 to 1797693134862315708145...": the
// range in words ("above 0", "0 or more", "1 to 100000"), or "" for any other message.
std::string range_in_words(const CLI::App* cmd, const std::string& what) {
  size_t colon = what.find(": Value "), range = what.find(" not in range "), to = what.rfind(" to ");
  if (colon == std::string::npos || range == std::string::npos || to == std::string::npos || to < range) return "";
  std::string flag = what.substr(0, colon);
  std::string value = what.substr(colon + 8, range - colon - 8);
  std::string lo = trimmed_number(what.substr(range + 14, to - range - 14)), hi = trimmed_number(what.substr(to + 4));
  std::string kind;
  if (const CLI::Option* opt = cmd->get_option_no_throw(flag)) {
    try {
      kind = const_cast<CLI::Option*>(opt)->get_validator()->get_description();
    } catch (const std::exception&) {
    }
  }
  std::string words = kind == "POSITIVE" ? "a number above 0"
                      : kind == "NONNEGATIVE" || hi.size() > 20 ? "a number of " + lo + " or more"
                                                                : lo + " to " + hi;
  return flag + " takes " + words + ", not " + value;
}

// The first word of argv that looks like a flag (not a number) that neither `cmd` nor its
// parents take, "" when every one is known: CLI11 may complain of something else first (a
// required flag missing) when the real mistake is a flag it did not recognise.
std::string first_unknown_flag(const CLI::App* cmd, int argc, char** argv) {
  auto find = [&](const std::string& name) -> const CLI::Option* {
    for (const CLI::App* at = cmd; at; at = at->get_parent())
      if (const CLI::Option* o = at->get_option_no_throw(name)) return o;
    return nullptr;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-' || std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.') continue;
    std::string name = a.substr(0, a.find('='));
    if (a.rfind("--", 0) != 0 && name.size() > 2 && a.find('=') == std::string::npos) {
      // -w4 or -abc: a short flag with its value, or several; CLI11 judges those.
      if (find(name.substr(0, 2))) continue;
    }
    const CLI::Option* o = find(name);
    if (!o) return name;
    if (a.find('=') == std::string::npos && o->get_type_size() != 0) ++i;  // its value
  }
  return "";
}

// The original ParallelKernelBench's flags that pkb spells another way, and the pkb way.
struct OriginalFlag {
  const char* flag;
  const char* commands;  // the pkb commands the answer is for (space-separated), "*" for any
  const char* answer;
};

const OriginalFlag kOriginalFlags[] = {
    {"--measure-perf", "*",
     "pkb always times both sides after the correctness trials (--no-timing turns timing off); drop --measure-perf"},
    {"--mode", "*",
     "pkb has a command per mode: `pkb eval` checks and times a candidate against the reference (--mode eval), "
     "`pkb dryrun` runs the reference alone (--mode dryrun)"},
    {"--download", "*",
     "pkb eval --save-outputs DIR writes the failing trial's (else trial 0's) rank_<r>.pt files; pkb dryrun "
     "--save-outputs DIR writes the reference's"},
    {"--solutions-dir", "*",
     "pkb eval -s takes the candidate file itself (-s solutions_cuda/coll_allreduce.cu); `pkb sweep --solutions DIR` "
     "evaluates a folder of them"},
    {"--m", "eval dryrun validate sweep",
     "problems name their own sizes: give them with --size M=4096,N=1024 (pkb show PROBLEM lists a problem's)"},
    {"--n", "eval dryrun validate sweep",
     "problems name their own sizes: give them with --size M=4096,N=1024 (pkb show PROBLEM lists a problem's); "
     "pkb's -n is --trials"},
    {"--atol", "eval dryrun sweep",
     "tolerances come from each problem's spec (pkb show PROBLEM); `pkb compare --atol --rtol` compares saved "
     "outputs with your own"},
    {"--rtol", "eval dryrun sweep",
     "tolerances come from each problem's spec (pkb show PROBLEM); `pkb compare --atol --rtol` compares saved "
     "outputs with your own"},
    {"--profile", "*", "pkb records no profiler traces; run pkb under nsys or ncu for those"},
    {"--logs-dir", "*", "pkb eval --json FILE writes the result and --save-outputs DIR the tensors"},
    {"--print-prompt", "*", "`pkb prompt -p PROBLEM --backend cuda` prints the prompt"},
    {"--paths-to-prompts-template", "*", "prompt templates are --prompts FILE (default prompts.toml)"},
    {"--step-limit", "agent", "pkb agent's turns are --turns N"},
    {"--remote-eval-command", "agent", "pkb agent evaluates every answer itself, as pkb eval does"},
    {"--remote-dryrun-command", "agent", "pkb agent evaluates every answer itself, as pkb eval does"},
};

// Flags of the original that a command line given to no command holds: pkb wants a
// command first ("pkb eval ..."), which --mode names.
std::string mode_answer(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value = a.rfind("--mode=", 0) == 0 ? a.substr(7) : a == "--mode" && i + 1 < argc ? argv[i + 1] : "";
    if (value == "eval" || value == "dryrun")
      return "pkb takes the mode as its command: `pkb " + value + " -p PROBLEM" +
             (value == "eval" ? " -s FILE -w N ...`" : " -w N ...`") + " (docs/migrating.md maps the original's flags)";
  }
  return "";
}

}  // namespace

std::string original_flag_answer(const std::string& command, const std::string& flag) {
  for (auto& f : kOriginalFlags) {
    if (flag != f.flag) continue;
    std::string cmds = std::string(" ") + f.commands + " ";
    if (cmds == " * " || cmds.find(" " + command + " ") != std::string::npos) return f.answer;
  }
  return "";
}

int explain_parse_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (e.get_exit_code() == 0) return app.exit(e);
  const CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
  if (cmd == &app) {
    std::string mode = mode_answer(argc, argv);
    if (!mode.empty()) {
      fprintf(stderr, "pkb: error: %s\n", mode.c_str());
      return eval::kUsage;
    }
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
  // An unknown flag is the mistake, whatever CLI11 met first.
  std::string flag = first_unknown_flag(cmd, argc, argv);
  if (!flag.empty()) {
    std::string answer = original_flag_answer(cmd->get_name(), flag);
    if (flag == "--mode" && !mode_answer(argc, argv).empty()) {
      fprintf(stderr, "pkb: error: %s\n", mode_answer(argc, argv).c_str());
      return eval::kUsage;
    }
    if (!answer.empty()) {
      fprintf(stderr, "pkb: error: %s is the original ParallelKernelBench's flag: %s\n", flag.c_str(), answer.c_str());
      return eval::kUsage;
    }
    std::string near = nearest_flag(flag, flag_names(cmd));
    fprintf(stderr, "pkb: error: unknown flag %s for %s; %s\n", flag.c_str(), command_path(cmd).c_str(),
            near.empty() ? (command_path(cmd) + " --help lists them").c_str() : ("did you mean " + near + "?").c_str());
    return eval::kUsage;
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    // CLI11 lists the unexpected arguments in reverse.
    std::string what = e.what();
    std::vector<std::string> extras;
    std::stringstream words(what.substr(what.find(':') + 1));
    for (std::string w; words >> w;) extras.insert(extras.begin(), w);
    if (!extras.empty()) {
      fprintf(stderr, "pkb: error: unexpected argument '%s' for %s; %s --help says what it takes\n",
              extras.front().c_str(), command_path(cmd).c_str(), command_path(cmd).c_str());
      return eval::kUsage;
    }
  }
  if (dynamic_cast<const CLI::ValidationError*>(&e)) {
    std::string what = e.what();
    // pkb dryrun --solution cuda: the original ran a candidate alone in dryrun mode.
    if (cmd->get_name() == "dryrun" && what.rfind("--solution:", 0) == 0) {
      fprintf(stderr,
              "pkb: error: pkb dryrun runs the reference alone (--solution reference); to run a candidate, `pkb eval -p "
              "PROBLEM -s FILE` (--save-outputs DIR keeps its outputs)\n");
      return eval::kUsage;
    }
    std::string words = range_in_words(cmd, what);
    if (!words.empty()) {
      fprintf(stderr, "pkb: error: %s; %s --help says what each flag takes\n", words.c_str(), command_path(cmd).c_str());
      return eval::kUsage;
    }
  }
  // Anything else (a missing value, a value not among the choices): CLI11's words, on one line.
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
