#include "sweep/slurm.hpp"

#include <filesystem>
#include <fstream>
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
  s << "#!/bin/bash\n";
  if (job.array)
    s << "# Written by pkb sweep --launcher slurm. Task i of the array evaluates share i of the grid\n"
      << "# on one node and appends to task_<i>.jsonl; submit again to resume, `pkb report " << job.results_dir
      << "` merges.\n";
  else
    s << "# Written by pkb --launcher slurm: one task on one node; its result lands in " << job.results_dir << ".\n";
  s << "#SBATCH --job-name=" << job.name << "\n";
  if (job.array) s << "#SBATCH --array=0-" << job.nodes - 1 << "\n";
  s << "#SBATCH --nodes=1\n"
    << "#SBATCH --ntasks=1\n"
    << "#SBATCH --exclusive\n"
    << "#SBATCH --output=" << job.results_dir << (job.array ? "/slurm-%A_%a.log\n" : "/slurm-%j.log\n");
  if (job.gpus_per_node > 0) s << "#SBATCH --gres=gpu:" << job.gpus_per_node << "\n";
  for (auto& opt : job.sbatch_options) s << "#SBATCH " << opt << "\n";
  s << "set -euo pipefail\n"
    << "cd " << shell_quote(job.workdir) << "\n"
    << "exec";
  for (auto& a : job.argv) s << " " << shell_quote(a);
  if (job.array)
    s << " \\\n  --shard \"$SLURM_ARRAY_TASK_ID/" << job.nodes << "\" --out " << dir
      << "/task_\"$SLURM_ARRAY_TASK_ID\".jsonl";
  s << "\n";
  return s.str();
}

Submission sbatch(const std::string& script_path, bool wait) {
  if (launch::which("sbatch").empty())
    throw std::runtime_error("sbatch is not on PATH; run on a Slurm login node, or submit " + script_path + " there");
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  if (wait) argv.push_back("--wait");
  argv.push_back(script_path);
  // --wait blocks until the whole job has ended: allow a week.
  launch::ProcessResult r = launch::run_process(argv, wait ? 7 * 24 * 3600.0 : 300.0);
  Submission sub;
  sub.id = r.out.substr(0, r.out.find_first_of(";\n"));
  sub.ok = r.ok();
  if (!sub.ok) {
    sub.error = r.err.empty() ? r.out : r.err;
    while (!sub.error.empty() && (sub.error.back() == '\n' || sub.error.back() == ' ')) sub.error.pop_back();
  }
  return sub;
}

std::string submit(const std::string& script_path, bool wait) {
  Submission sub = sbatch(script_path, wait);
  if (!sub.ok) {
    if (wait && !sub.id.empty())
      throw std::runtime_error("Slurm job " + sub.id + " ended with failed tasks (their logs are beside the results): " +
                               sub.error);
    throw std::runtime_error("sbatch refused " + script_path + ": " + sub.error);
  }
  return sub.id;
}

std::string slurm_result_path(const std::string& dir) {
  return (std::filesystem::path(dir) / "result.json").string();
}

SlurmEvalResult eval_on_slurm(const SlurmEval& e) {
  namespace fs = std::filesystem;
  fs::create_directories(e.dir);
  const std::string result = slurm_result_path(e.dir);
  fs::remove(result);
  SlurmJob job;
  job.name = "pkb-eval";
  job.array = false;
  job.results_dir = e.dir;
  job.workdir = fs::current_path().string();
  job.gpus_per_node = e.gpus;
  job.sbatch_options = e.sbatch_options;
  job.argv = e.argv;
  std::string script = (fs::path(e.dir) / "eval.sbatch").string();
  std::ofstream file(script);
  file << slurm_script(job);
  file.close();
  if (!file) throw std::runtime_error("cannot write " + script + "; pick a --slurm-dir you can write to");
  if (e.on_submit) e.on_submit(script);
  Submission sub = sbatch(script, true);
  SlurmEvalResult out;
  std::string log = (fs::path(e.dir) / ("slurm-" + sub.id + ".log")).string();
  if (!fs::exists(result)) {
    std::ifstream f(log);
    std::vector<std::string> lines;
    for (std::string line; std::getline(f, line);) lines.push_back(line);
    std::string tail;
    for (size_t i = lines.size() > 12 ? lines.size() - 12 : 0; i < lines.size(); ++i) tail += "  " + lines[i] + "\n";
    out.error = (sub.id.empty() ? "sbatch refused " + script + ": " + sub.error
                                : "Slurm job " + sub.id + " ended" + (sub.ok ? "" : " with an error: " + sub.error)) +
                "; the job wrote no result. The end of " + log + ":\n" + tail;
    return out;
  }
  std::ifstream in(result);
  nlohmann::json res = nlohmann::json::parse(in, nullptr, false);
  try {
    out.record = eval::Record::from_json(res);
  } catch (const std::exception& x) {
    out.error = result + " is not a pkb.eval/1 result (" + x.what() + ")";
    return out;
  }
  out.record->slurm = eval::SlurmTag{sub.id, e.dir};
  return out;
}

}  // namespace pkb::sweep
