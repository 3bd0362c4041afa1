#include "cli/common.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <random>

#include <unistd.h>

#include "eval/verdict.hpp"
#include "gen/models.hpp"
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
  app->add_flag("--no-sandbox", no_sandbox,
                "run candidates unconfined: every environment variable, any file, the network (debugging only)");
  app->add_option("--pass-env", pass_env, "an environment variable ranks keep although it looks secret (repeatable)");
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
                              const spec::ProblemSpec* spec, const std::string& label) {
  launch::GroupOptions opts;
  opts.world = p.world;
  opts.argv = {launch::self_exe(), "__worker"};
  opts.env = p.env;
  opts.env_policy.isolate = !o.no_sandbox;
  opts.env_policy.pass = o.pass_env;
  opts.env_policy.deny = key_variables(g);
  opts.budgets = launch::phase_budgets(spec, job.size, p, o.timeout);
  opts.echo = o.echo;
  opts.job = [&](int r) {
    rank::Job j = job;
    j.rank = r;
    j.world = p.world;
    j.device = p.device;
    j.gpu = p.gpu_of(r);
    j.comm = p.comm;
    j.reference_libs = g.reference_libs;
    j.sandbox = job.sandbox && !o.no_sandbox;
    return rank::to_json(j).dump();
  };
  bool tty = isatty(2) && !o.echo;
  int shown = -1;
  opts.on_phase = [&](int r, const std::string& phase, int trial) {
    if (!tty || r != 0) return;
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
