// Running a sweep: every task is one `pkb eval` child process (a crash or hang costs only
// that child), fed by `pkb build` children compiling ahead on all cores. One evaluation at a
// time, or with `parallel` several, packed onto the node's GPUs (sweep/scheduler.hpp). Each
// evaluation's line is appended to the results file the moment it ends, by one thread.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "eval/eval_command.hpp"
#include "eval/record.hpp"
#include "launch/subprocess.hpp"
#include "sweep/candidates.hpp"
#include "sweep/results_file.hpp"

namespace pkb::sweep {

struct RunnerOptions {
  std::string pkb;                       // the executable run as `pkb build` and `pkb eval`
  std::vector<std::string> global_args;  // --root, --problem-dir, --reference-lib: the children see the same problems
  Settings settings;
  int jobs = 1;                          // compilations at once
  double deadline_s = 3600;              // a child still running after this is killed
  std::string scratch_dir;               // where evaluations write their JSON before it is appended
  // Evaluations at once. 1: one after another in the grid's order, each with every GPU it
  // asks for and nothing else on the node (what timing wants). More: packed largest W first,
  // each child seeing only its own GPUs (CUDA_VISIBLE_DEVICES), or on the CPU device that
  // many side by side.
  int parallel = 1;
  std::vector<std::string> gpus;  // the node's GPUs as CUDA_VISIBLE_DEVICES names them; empty on the CPU device
};

struct Callbacks {  // called one at a time, from any thread
  std::function<void(const Candidate&, bool compiled)> on_built;
  std::function<void(const Task&)> on_start;
  std::function<void(const Task&, const eval::Record& line)> on_result;
};

// pkb eval refused the command line (exit 2): every evaluation would, so the sweep stops.
struct EvalRejected : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The `pkb eval` command line of a task (eval::EvalCommand); `cpus`: its share of the
// node's CPUs (--cpus), "" for all.
std::vector<std::string> eval_argv(const Task& t, const RunnerOptions& o, const std::string& json_out,
                                   const std::string& cpus = "");

// The share of `allowed` (the node's CPUs, in order) that goes with GPU slots `on` of
// `gpus`: slot g takes the g-th of `gpus` equal runs, so evaluations side by side pin their
// timed threads to CPUs of their own (GPUs near the same CPUs get neighbouring shares), as
// a CPU list ("" where a slot's share would be empty).
std::string cpu_share(const std::vector<int>& allowed, const std::vector<int>& on, size_t gpus);

// What the task's record says before pkb eval ran.
eval::Record record_head(const Task& t, const Settings& s);

// The line to record for a finished child: its pkb.eval/1 record, or, when it wrote none
// (or one that cannot be read), the verdict its exit code or death implies (flagged
// "no_result"); plus the sweep's fields. Throws EvalRejected on a usage error.
eval::Record record_for(const Task& t, const Settings& s, const launch::ProcessResult& child,
                          const std::string& json_text, double wall_s, double deadline_s);

// Evaluates `tasks` (in order, or packed: RunnerOptions::parallel), skipping those `out`
// already has. Returns how many it ran. pkb eval refusing its command line stops the sweep:
// nothing more starts, those running finish and are recorded, then EvalRejected is thrown.
size_t run_sweep(const std::vector<Task>& tasks, ResultsFile& out, const RunnerOptions& o, const Callbacks& cb);

}  // namespace pkb::sweep
