// What the commands share: where pkb's data lives, the problem registry, and how a run is
// placed on devices and launched (device, world size, ranks per GPU, MPS, deadlines).
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch/group.hpp"
#include "launch/mps.hpp"
#include "spec/registry.hpp"

namespace pkb::cli {

// A user error: printed as one line, exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Globals {
  std::string root;  // holds problems/, reference/, hardware/, include/
  std::vector<std::string> problem_dirs;
  std::vector<std::string> reference_libs;
  bool verbose = false;

  // Loads reference libraries and every spec on first use. Throws UsageError.
  const spec::Registry& registry();
  const spec::ProblemSpec& problem(const std::string& key);

 private:
  std::optional<spec::Registry> registry_;
};

// Runs `pkb __probe` in a child process (the parent itself never initialises CUDA).
nlohmann::json probe_devices();

struct RunOptions {
  std::string device = "auto";
  int world = 0;
  int ranks_per_gpu = 0;
  double timeout = 0;
  bool echo = false;
  bool multicast = false;
  bool no_mps = false;
  void add_to(CLI::App* app);
};

// A run placed on devices.
struct Placement {
  std::string device;  // "cpu" or "cuda"
  int world = 1;
  int ranks_per_gpu = 1;
  int gpus = 0;        // visible GPUs
  std::string comm;    // "nccl" or "gloo"
  std::string gpu_name;
  nlohmann::json probe = nlohmann::json::object();
  std::unique_ptr<launch::MpsDaemon> mps;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> warnings;
  int gpu_of(int rank) const { return device == "cuda" ? rank / ranks_per_gpu : -1; }
};

// The --size help, and its check: a preset, PRESET:NAME=VALUE,... or NAME=VALUE,... (on the
// default preset). Throws UsageError naming what the problem has.
extern const char* const kSizeHelp;
void check_size(const spec::ProblemSpec& s, const std::string& size);

// Decides device, W, ranks per GPU and communicator; starts MPS where ranks share a GPU.
// `spec` (optional) checks W against the problem's constraints. Throws UsageError.
Placement place(const RunOptions& o, const spec::ProblemSpec* spec, const std::string& preset);

// Per-phase deadlines in seconds for a problem run.
std::map<std::string, double> budgets(const RunOptions& o, const spec::ProblemSpec* spec, const std::string& preset,
                                      const Placement& p);

// Starts the ranks with `job` (rank, world, device, gpu and comm are filled in per rank)
// and waits. `label` names the run on the progress line.
launch::GroupReport run_ranks(const Placement& p, const nlohmann::json& job, const std::map<std::string, double>& budgets,
                              bool echo, const std::string& label, int trials);

// The exit code for a failed group (crash, timeout, interrupt).
int exit_for(const launch::GroupReport& r);

// A fresh secret seed from the kernel, or the user's.
uint64_t make_seed(const std::string& given);

void warn(const std::string& msg);

// When this pkb process started (main() sets it first thing).
std::chrono::steady_clock::time_point process_start();

}  // namespace pkb::cli
