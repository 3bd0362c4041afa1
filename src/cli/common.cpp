#include "cli/common.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <type_traits>

#include <unistd.h>

#include "build/builder.hpp"
#include "eval/verdict.hpp"
#include "gen/models.hpp"
#include "io/text.hpp"
#include "io/toml_reader.hpp"
#include "launch/subprocess.hpp"
#include "run/placing.hpp"
#include "run/rank_library.hpp"

namespace pkb::cli {

using json = nlohmann::json;

void warn(const std::string& msg) { spdlog::warn("{}", msg); }

std::chrono::steady_clock::time_point process_start() {
  static const auto t = std::chrono::steady_clock::now();
  return t;
}

const spec::Registry& Globals::registry() {
  if (!registry_) {
    // Read from the libraries' files: the parent loads no libtorch (run/rank_library.hpp),
    // unless a --reference-lib needs checking: one that does not load is bad input here, not
    // a rank's crash later.
    std::vector<std::string> slugs;
    for (auto& lib : reference_libs) {
      auto more = run::reference_slugs_in(lib);
      slugs.insert(slugs.end(), more.begin(), more.end());
      try {
        run::rank_library().load_reference_library(lib);
      } catch (const io::InputError&) {
        throw;
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
    }
    auto compiled = run::compiled_reference_slugs();
    slugs.insert(slugs.end(), compiled.begin(), compiled.end());
    std::vector<std::string> dirs = {root + "/problems"};
    dirs.insert(dirs.end(), problem_dirs.begin(), problem_dirs.end());
    try {
      registry_ = spec::Registry::load(dirs, slugs);
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

void add_format_option(CLI::App* cmd) {
  cmd->add_option_function<std::string>("--candidate-format", [](const std::string& f) {
    build::force_format(f == "original" ? build::Format::original : f == "pkb" ? build::Format::pkb : build::Format::automatic);
  }, "a .py candidate's format: auto (solution() and no pkb_run() is the original ParallelKernelBench's), original, pkb")
      ->check(CLI::IsMember({"auto", "original", "pkb"}));
}

void check_dtype(const std::string& dtype) {
  if (!dtype.empty() && !spec::is_dtype_name(dtype))
    throw UsageError("unknown --dtype '" + dtype + "'; use one of " + spec::dtype_names());
}

void add_settings(CLI::App* cmd, rank::EvalSettings& s, const std::vector<std::string>& except) {
  rank::for_each_setting(s, [&](const rank::Setting& x, auto& v) {
    using T = std::decay_t<decltype(v)>;
    if (std::find(except.begin(), except.end(), x.flag) != except.end()) return;
    // The short name unless the command uses it otherwise (pkb agent's -n is its samples).
    bool short_free = *x.short_flag && !cmd->get_option_no_throw(x.short_flag);
    std::string names = short_free ? std::string(x.short_flag) + "," + x.flag : std::string(x.flag);
    if constexpr (std::is_same_v<T, bool>) {
      cmd->add_flag_callback(names, [&v] { v = false; }, x.help);  // on by default: the flag turns it off
    } else {
      CLI::Option* o = cmd->add_option(names, v, x.help)->capture_default_str();
      if constexpr (std::is_arithmetic_v<T>) {
        if (x.max >= x.min) o->check(CLI::Range(static_cast<T>(x.min), static_cast<T>(x.max)));
      } else if (!x.choices.empty()) {
        o->check(CLI::IsMember(std::vector<std::string>(x.choices.begin(), x.choices.end())));
      }
      if (std::string(x.flag) == "--dtype") o->transform(dtype_spellings());
    }
  });
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
  app->add_option("--pin-cpus", place.pin,
                  "each rank's timed thread on a CPU of its own, the judge's and the candidate rank's the same "
                  "one, the rest of both on a second: auto (on CUDA where two CPUs a rank and one more are "
                  "allowed), on, or off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app->add_option("--cpus", place.cpus,
                  "the CPUs --pin-cpus may take, as a list (0-7,16-23): one run's share where several run on one "
                  "node (pkb sweep --parallel gives each its own)");
  app->add_flag("--no-sandbox", no_sandbox,
                "run candidates unconfined: every environment variable, any file, the network (debugging only)");
  app->add_option("--pass-env", pass_env, "an environment variable ranks keep although it looks secret (repeatable)");
  app->add_flag("--exec-ranks", exec_ranks,
                "start each rank by exec'ing pkb afresh instead of forking it from pkb's fork server, which has "
                "pkb and libtorch loaded already (slower; to rule the fork server out)");
}

const spec::HardwareProfile* hardware_for(Globals& g, const std::string& wanted, const launch::Placement& p,
                                          std::vector<spec::HardwareProfile>& store) {
  try {
    return run::hardware_for(g.root + "/hardware/profiles.toml", wanted, p, store);
  } catch (const io::InputError& e) {
    throw UsageError(e.what());
  }
}

launch::Placement place(const RunOptions& o, const spec::ProblemSpec* spec, const std::string& size) {
  launch::Placement p = launch::place(o.place, spec, size);
  for (auto& w : p.warnings) warn(w);
  return p;
}

launch::Placement place_all(const RunOptions& o, std::vector<const spec::ProblemSpec*>& todo, const std::string& size,
                            const spec::ProblemSpec*& slowest, bool skip_unfit) {
  launch::Placement p = place(o, todo.size() == 1 && !skip_unfit ? todo.front() : nullptr, size);
  run::WorldFit f = run::fit_world(todo, p.world, size);
  std::string refused;
  for (auto& [s, err] : f.unfit) {
    if (skip_unfit) printf("%-44s skipped: %s\n", s->slug.c_str(), err.c_str());
    else refused += (refused.empty() ? "" : ", ") + s->slug;
  }
  if (!refused.empty() || f.fit.empty())
    throw UsageError("W=" + std::to_string(p.world) + " does not fit " + (refused.empty() ? "any of them" : refused) +
                     " (pkb list gives the world sizes each takes); leave them out or pick another --world-size");
  todo = f.fit;
  slowest = run::slowest_of(todo);
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

run::RankSettings rank_settings(const Globals& g, const RunOptions& o) {
  run::RankSettings s;
  s.timeout = o.timeout;
  s.echo = o.echo;
  s.sandbox = !o.no_sandbox;
  s.fork_server = !o.exec_ranks;
  s.pass_env = o.pass_env;
  s.deny_env = key_variables(g);
  s.reference_libs = g.reference_libs;
  return s;
}

launch::GroupReport run_ranks(Globals& g, const launch::Placement& p, const RunOptions& o, const rank::Job& job,
                              const spec::ProblemSpec* spec, const std::string& label, bool judged) {
  launch::GroupReport r = run::run_ranks(p, rank_settings(g, o), job, spec, label, judged);
  if (!r.fork_server_failed.empty()) warn(r.fork_server_failed + "; each rank was exec'd instead");
  return r;
}

int exit_for(const launch::GroupReport& r) { return run::exit_for(r); }

uint64_t make_seed(const std::string& given) {
  try {
    return run::make_seed(given);
  } catch (const io::InputError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace pkb::cli
