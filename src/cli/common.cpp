#include "cli/common.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <random>

#include <unistd.h>

#include "cli/exit_codes.hpp"
#include "launch/subprocess.hpp"
#include "worker/references.hpp"

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
        worker::load_reference_library(lib);
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
    }
    std::vector<std::string> dirs = {root + "/problems"};
    dirs.insert(dirs.end(), problem_dirs.begin(), problem_dirs.end());
    try {
      registry_ = spec::Registry::load(dirs, worker::reference_slugs());
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
    "size preset (default, large, ...), or sizes replaced: large:M=4096,N=512 or M=4096 (on default)";

void check_size(const spec::ProblemSpec& s, const std::string& size) {
  try {
    s.size_values(size);
  } catch (const spec::SpecError& e) {
    throw UsageError(e.what());
  }
}

json probe_devices() {
  // Without the NVIDIA driver there is nothing to probe, and no point starting CUDA.
  if (access("/dev/nvidiactl", F_OK) != 0 && access("/proc/driver/nvidia", F_OK) != 0)
    return json{{"cuda_built", true}, {"devices", json::array()}, {"note", "no NVIDIA driver"}};
  launch::ProcessResult r = launch::run_process({launch::self_exe(), "__probe"}, 120);
  json j = json::parse(r.out, nullptr, false);
  if (!r.ok() || j.is_discarded())
    return json{{"devices", json::array()}, {"error", "device probe failed: " + r.err.substr(0, 400)}};
  return j;
}

void RunOptions::add_to(CLI::App* app) {
  app->add_option("--device", device, "cuda, cpu, or auto (CUDA when a GPU is visible)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  app->add_option("-w,--world-size", world, "ranks (default: visible GPUs; 4 on the CPU device)")
      ->check(CLI::Range(1, 1024));
  app->add_option("--ranks-per-gpu", ranks_per_gpu, "ranks sharing each GPU (timings then mean nothing)")
      ->check(CLI::Range(1, 64));
  app->add_option("--timeout", timeout, "seconds allowed per phase (init, each trial, timing)")
      ->check(CLI::PositiveNumber);
  app->add_flag("--echo", echo, "print every rank's output as it comes");
  app->add_flag("--multicast", multicast, "allow NVLink multicast (NVLS) in NCCL; off by default");
  app->add_flag("--no-mps", no_mps, "do not start a private MPS daemon when ranks share a GPU");
}

Placement place(const RunOptions& o, const spec::ProblemSpec* spec, const std::string& preset) {
  Placement p;
  std::string device = o.device;
  if (device != "cpu") {
    p.probe = probe_devices();
    p.gpus = static_cast<int>(p.probe.value("devices", json::array()).size());
    if (!p.probe.value("cuda_built", false) && device == "cuda")
      throw UsageError("pkb was built without the CUDA device; use --device cpu or rebuild with the CUDA toolkit");
    if (device == "cuda" && p.gpus == 0)
      throw UsageError("--device cuda, but no GPU is visible (" + p.probe.value("note", p.probe.value("error", std::string("CUDA sees none"))) + ")");
    device = p.gpus > 0 ? "cuda" : "cpu";
    if (p.gpus > 0) p.gpu_name = p.probe["devices"][0].value("name", "");
  }
  p.device = device;
  if (device == "cpu") {
    p.world = o.world ? o.world : 4;
    p.ranks_per_gpu = 1;
    p.comm = "gloo";
  } else {
    int k = o.ranks_per_gpu ? o.ranks_per_gpu : 1;
    p.world = o.world ? o.world : p.gpus * k;
    if (!o.ranks_per_gpu && p.world > p.gpus) k = (p.world + p.gpus - 1) / p.gpus;
    if (p.world > p.gpus * k)
      throw UsageError("W=" + std::to_string(p.world) + " ranks do not fit " + std::to_string(p.gpus) + " GPU(s) at " +
                       std::to_string(k) + " per GPU; raise --ranks-per-gpu");
    p.ranks_per_gpu = k;
    // NCCL refuses two ranks on one GPU; gloo (through the host) does not mind.
    p.comm = k > 1 ? "gloo" : "nccl";
    if (k > 1) {
      p.warnings.push_back(std::to_string(k) + " ranks share each GPU: the reference communicates through gloo and "
                           "timings mean nothing");
      if (o.no_mps) {
        p.warnings.push_back("MPS is off (--no-mps): device barriers between co-resident ranks take milliseconds");
      } else {
        std::string why;
        p.mps = launch::MpsDaemon::start(why);
        if (p.mps) {
          for (auto& kv : p.mps->env()) p.env.push_back(kv);
        } else {
          p.warnings.push_back("no private MPS daemon (" + why +
                               "): device barriers between co-resident ranks take milliseconds");
        }
      }
    }
  }
  if (spec) {
    std::string err = spec->world_size_error(p.world, preset);
    if (!err.empty()) throw UsageError(err + "; pick another --world-size or --size");
  }
  if (!o.multicast) {
    p.env.push_back({"NCCL_NVLS_ENABLE", "0"});
    p.env.push_back({"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"});
    p.env.push_back({"NVSHMEM_DISABLE_NVLS", "1"});
  }
  // One OpenMP thread per rank: W ranks already share the cores.
  if (!getenv("OMP_NUM_THREADS")) p.env.push_back({"OMP_NUM_THREADS", "1"});
  return p;
}

std::map<std::string, double> budgets(const RunOptions& o, const spec::ProblemSpec* spec, const std::string& preset,
                                      const Placement& p) {
  double trial = spec && spec->trial_timeout_s > 0 ? spec->trial_timeout_s : 60;
  if (preset != "default") trial *= 4;
  if (p.ranks_per_gpu > 1 || p.device == "cpu") trial *= 2;
  std::map<std::string, double> b = {{"bootstrap", 120}, {"init", 180}, {"trial", trial}, {"sync", trial},
                                     {"save", 300},      {"finish", 60}, {"exit", 60},     {"default", 120}};
  // The phases of timing run hundreds of calls.
  for (const char* phase : {"timing_setup", "candidate_warmup", "candidate_timing", "escape_check", "reference_warmup",
                            "reference_timing", "timing_checks"})
    b[phase] = 10 * trial;
  if (o.timeout > 0)
    for (auto& [k, v] : b)
      if (k != "bootstrap") v = o.timeout;
  return b;
}

launch::GroupReport run_ranks(const Placement& p, const json& job, const std::map<std::string, double>& budgets,
                              bool echo, const std::string& label, int trials) {
  launch::GroupOptions g;
  g.world = p.world;
  g.argv = {launch::self_exe(), "__worker"};
  g.env = p.env;
  g.budgets = budgets;
  g.echo = echo;
  g.job = [&](int rank) {
    json j = job;
    j["rank"] = rank;
    j["world"] = p.world;
    j["device"] = p.device;
    j["gpu"] = p.gpu_of(rank);
    j["comm"] = p.comm;
    return j.dump();
  };
  bool tty = isatty(2) && !echo;
  int shown = -1;
  g.on_phase = [&](int rank, const std::string& phase, int trial) {
    if (!tty || rank != 0) return;
    if (phase == "trial" && trial != shown) {
      shown = trial;
      fprintf(stderr, "\r\033[K%s  trial %d/%d", label.c_str(), trial + 1, trials);
    } else if (phase != "trial") {
      fprintf(stderr, "\r\033[K%s  %s", label.c_str(), phase.c_str());
    }
  };
  launch::GroupReport r = launch::run_group(g);
  if (tty) fprintf(stderr, "\r\033[K");
  return r;
}

int exit_for(const launch::GroupReport& r) {
  switch (r.outcome) {
    case launch::Outcome::Ok: return kOk;
    case launch::Outcome::Crash: return kCrash;
    case launch::Outcome::Timeout: return kTimeout;
    case launch::Outcome::Interrupted: return kInterrupted;
  }
  return kInternal;
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
