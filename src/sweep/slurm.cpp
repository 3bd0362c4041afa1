#include "sweep/slurm.hpp"

#include <sstream>
#include <stdexcept>

#include "launch/subprocess.hpp"

namespace pkb::sweep {

std::string shell_quote(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string slurm_script(const SlurmJob& job) {
  std::ostringstream s;
  std::string dir = shell_quote(job.results_dir);
  s << "#!/bin/bash\n"
    << "# Written by pkb sweep --launcher slurm. Task i of the array evaluates share i of the grid\n"
    << "# on one node and appends to task_<i>.jsonl; submit again to resume, `pkb report " << job.results_dir
    << "` merges.\n"
    << "#SBATCH --job-name=pkb-sweep\n"
    << "#SBATCH --array=0-" << job.nodes - 1 << "\n"
    << "#SBATCH --nodes=1\n"
    << "#SBATCH --ntasks=1\n"
    << "#SBATCH --exclusive\n"
    << "#SBATCH --output=" << job.results_dir << "/slurm-%A_%a.log\n";
  if (job.gpus_per_node > 0) s << "#SBATCH --gres=gpu:" << job.gpus_per_node << "\n";
  for (auto& opt : job.sbatch_options) s << "#SBATCH " << opt << "\n";
  s << "set -euo pipefail\n"
    << "cd " << shell_quote(job.workdir) << "\n"
    << "exec";
  for (auto& a : job.sweep_argv) s << " " << shell_quote(a);
  s << " \\\n  --shard \"$SLURM_ARRAY_TASK_ID/" << job.nodes << "\" --out " << dir
    << "/task_\"$SLURM_ARRAY_TASK_ID\".jsonl\n";
  return s.str();
}

std::string submit(const std::string& script_path, bool wait) {
  if (launch::which("sbatch").empty())
    throw std::runtime_error("sbatch is not on PATH; run on a Slurm login node, or submit " + script_path + " there");
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  if (wait) argv.push_back("--wait");
  argv.push_back(script_path);
  // --wait blocks until the whole array has ended: allow a week.
  launch::ProcessResult r = launch::run_process(argv, wait ? 7 * 24 * 3600.0 : 300.0);
  std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
  if (!r.ok()) {
    std::string why = r.err.empty() ? r.out : r.err;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    if (wait && !id.empty())
      throw std::runtime_error("Slurm job " + id + " ended with failed tasks (their logs are beside the results): " + why);
    throw std::runtime_error("sbatch refused " + script_path + ": " + why);
  }
  return id;
}

}  // namespace pkb::sweep
