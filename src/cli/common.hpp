// What the commands share: where pkb's data lives, the problem registry, the flags of a run
// that starts ranks (what they mean is run/'s and launch/'s), and how a rejected command
// line is explained (parse_errors.cpp).
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

#include "io/input_error.hpp"
#include "launch/group.hpp"
#include "launch/placement.hpp"
#include "rank/job.hpp"
#include "run/ranks.hpp"
#include "spec/hardware.hpp"
#include "spec/registry.hpp"

namespace pkb::cli {

// A user error: printed as one line, exit code 2 (as is every io::InputError: a bad spec,
// TOML file or value).
struct UsageError : io::InputError {
  using io::InputError::InputError;
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

// The flags of every command that starts ranks: placement, deadlines, the sandbox.
struct RunOptions {
  launch::PlaceRequest place;
  double timeout = 0;
  bool echo = false;
  bool no_sandbox = false;             // run candidates unconfined (debugging only)
  bool exec_ranks = false;             // each rank exec'd afresh, no fork server (to rule it out)
  std::vector<std::string> pass_env;   // --pass-env NAME: into the ranks on purpose
  void add_to(CLI::App* app);
};

// -m,--model (required) and -p,--problem, comma lists, as generate and agent take them.
CLI::Option* add_model_option(CLI::App* cmd, std::vector<std::string>& models);
CLI::Option* add_problem_option(CLI::App* cmd, std::vector<std::string>& problems);

// --dtype's transform: the spellings torch and the original ParallelKernelBench use
// (bfloat16, float16, float32, float64, float8_e4m3fn, float8_e5m2) become pkb's (bf16, ...).
CLI::Validator dtype_spellings();

// --candidate-format: what a .py candidate is taken for (build::force_format).
void add_format_option(CLI::App* cmd);

// The --size help, and its check: a preset, PRESET:NAME=VALUE,... or NAME=VALUE,... (on the
// default preset). Throws UsageError naming what the problem has.
extern const char* const kSizeHelp;
void check_size(const spec::ProblemSpec& s, const std::string& size);
// --dtype's check ("" is the spec's own): UsageError listing the names.
void check_dtype(const std::string& dtype);

// An evaluation's settings as flags of `cmd` (rank/settings.hpp: each with its range or
// choices, and its default in the help), bound to `s`. pkb eval, sweep and agent take them
// alike, so what one measures the others can ask for. `except`: flags the command binds
// otherwise (pkb agent's --size and --dtype are also its prompt's).
void add_settings(CLI::App* cmd, rank::EvalSettings& s, const std::vector<std::string>& except = {});

// The hardware profile a run's roofline uses: `wanted` by name, or "auto": the one that
// fits the placed GPUs (none for the CPU device). `store` holds the profiles read.
const spec::HardwareProfile* hardware_for(Globals& g, const std::string& wanted, const launch::Placement& p,
                                          std::vector<spec::HardwareProfile>& store);

// Places a run (launch::place), printing its warnings. Throws UsageError.
launch::Placement place(const RunOptions& o, const spec::ProblemSpec* spec, const std::string& size);
// Places problems that run in turn on one set of ranks: every one must take its world size,
// else a UsageError names those that do not; with `skip_unfit` (the user asked for a whole
// category or 'all') those are left out of `todo`, each with a line saying so. `slowest`:
// the one whose deadlines the ranks get (the most generous trial deadline).
launch::Placement place_all(const RunOptions& o, std::vector<const spec::ProblemSpec*>& todo, const std::string& size,
                            const spec::ProblemSpec*& slowest, bool skip_unfit = false);

// The flags of every command that starts ranks, as run/ranks.hpp takes them (with the key
// variables of models.toml, which never go into a rank).
run::RankSettings rank_settings(const Globals& g, const RunOptions& o);

// Starts the ranks with `job` (rank, world, device, gpu, comm and reference libraries are
// filled in per rank) and waits, under the deadlines of `spec` at the job's size. `label`
// names the run on the progress line. With `judged` (pkb eval), 2 W processes: W judge
// ranks, then W candidate ranks, candidate rank r beside judge r on its GPU; each kind
// may write only its own store keys.
launch::GroupReport run_ranks(Globals& g, const launch::Placement& p, const RunOptions& o, const rank::Job& job,
                              const spec::ProblemSpec* spec, const std::string& label, bool judged = false);

// The exit code for a failed group (crash, timeout, interrupt).
int exit_for(const launch::GroupReport& r);

// A fresh secret seed from the kernel, or the user's.
uint64_t make_seed(const std::string& given);

void warn(const std::string& msg);

// Prints one line for a command line CLI11 rejected, and returns the exit code (2; 0 for
// --help and --version): the nearest flag or command to an unknown one ("--trial": did you
// mean --trials?), the pkb way for a flag of the original ParallelKernelBench (--measure-perf,
// --mode, --download, ...), and a value out of range in words.
int explain_parse_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv);

// The pkb way for a flag of the original ParallelKernelBench that pkb does not take, as
// one sentence; "" when `flag` is not one. `command`: the pkb command it was given to.
std::string original_flag_answer(const std::string& command, const std::string& flag);

// When this pkb process started (main() sets it first thing).
std::chrono::steady_clock::time_point process_start();

}  // namespace pkb::cli
