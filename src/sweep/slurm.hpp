// Sweeps beyond one node: a Slurm array job whose task i runs `pkb sweep --shard i/N` on
// one node's GPUs and writes task_<i>.jsonl into a shared results folder (`pkb report
// FOLDER` merges them). Re-submitting resumes: each task skips what its file already has.
#pragma once

#include <string>
#include <vector>

namespace pkb::sweep {

struct SlurmJob {
  std::string results_dir;                  // shared by every node
  std::string workdir;                      // where each task starts (paths in sweep_argv are relative to it)
  int nodes = 1;                            // array tasks, one node each
  int gpus_per_node = 0;                    // asks for --gres=gpu:N when > 0
  std::vector<std::string> sweep_argv;      // `pkb ... sweep ...` without --shard and --out
  std::vector<std::string> sbatch_options;  // more #SBATCH lines: "--partition=gpu", "--time=4:00:00"
};

// The batch script.
std::string slurm_script(const SlurmJob& job);

// Submits a script with sbatch (waiting for the job to end when `wait`); returns the job id.
// Throws std::runtime_error with sbatch's own message.
std::string submit(const std::string& script_path, bool wait);

// 'text' for sh, with embedded quotes escaped.
std::string shell_quote(const std::string& text);

}  // namespace pkb::sweep
