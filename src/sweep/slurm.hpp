// Work beyond this machine, on Slurm. A sweep is an array job whose task i runs `pkb sweep
// --shard i/N` on one node's GPUs and writes task_<i>.jsonl into a shared results folder
// (`pkb report FOLDER` merges them); re-submitting resumes, as each task skips what its
// file already has. An evaluation (`pkb eval --launcher slurm`) is one task running `pkb
// eval` on a GPU node, writing its result into a shared folder for the submitting side.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "eval/record.hpp"

namespace pkb::sweep {

struct SlurmJob {
  std::string name = "pkb-sweep";           // --job-name
  std::string results_dir;                  // shared by every node; the logs go there too
  std::string workdir;                      // where each task starts (paths in argv are relative to it)
  bool array = true;                        // an array of `nodes` sweep shards; false: one task running argv
  int nodes = 1;                            // array tasks, one node each
  int gpus_per_node = 0;                    // asks for --gres=gpu:N when > 0
  std::vector<std::string> argv;            // `pkb ... sweep ...` without --shard and --out; or the whole command
  std::vector<std::string> sbatch_options;  // more #SBATCH lines: "--partition=gpu", "--time=4:00:00"
};

// The batch script.
std::string slurm_script(const SlurmJob& job);

struct Submission {
  std::string id;     // the job id ("" when sbatch refused the script)
  bool ok = false;    // submitted (with `wait`: every task ended with exit code 0)
  std::string error;  // sbatch's own words when not ok
};

// Submits a script with sbatch, waiting for the job to end when `wait`. Throws
// std::runtime_error only when sbatch is not on PATH.
Submission sbatch(const std::string& script_path, bool wait);

// sbatch() for a sweep: returns the job id; throws std::runtime_error with sbatch's own
// message when it refused the script or (with `wait`) a task failed.
std::string submit(const std::string& script_path, bool wait);

// 'text' for sh, with embedded quotes escaped.
std::string shell_quote(const std::string& text);

// One evaluation as a one-task Slurm job (`pkb eval --launcher slurm`): the script written
// into `dir`, submitted and waited for; the node runs `argv` (whose --json is `dir`/
// result.json, which both sides see) and the result comes back here.
struct SlurmEval {
  std::string dir;                 // created if missing
  std::vector<std::string> argv;   // the node's `pkb eval ...`
  int gpus = 0;                    // --gres=gpu:N when > 0
  std::vector<std::string> sbatch_options;
  // Called once the job is submitted and waited for (the caller says so before it waits).
  std::function<void(const std::string& script)> on_submit;
};
struct SlurmEvalResult {
  std::optional<eval::Record> record;  // the node's pkb.eval/1 record (with `slurm`: job and folder), or none
  std::string error;      // why there is none: sbatch's words or the job's end, and the log's last lines
};
// Throws std::runtime_error naming the fix where the script cannot be written or sbatch
// cannot be run.
SlurmEvalResult eval_on_slurm(const SlurmEval& e);

// The result file eval_on_slurm's job writes: `dir`/result.json.
std::string slurm_result_path(const std::string& dir);

}  // namespace pkb::sweep
