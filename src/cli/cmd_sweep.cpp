// pkb sweep: evaluates every candidate found under folders of solutions (the output of pkb
// generate, or hand-written ones) against its problem, one `pkb eval` child per evaluation,
// appending one JSON line per evaluation to a results file as each ends. A re-run of the
// same command resumes. `--launcher slurm` spreads the grid over the nodes of a cluster.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <unistd.h>

#include "cli/commands.hpp"
#include "eval/verdict.hpp"
#include "launch/signals.hpp"
#include "launch/subprocess.hpp"
#include "sweep/candidates.hpp"
#include "sweep/grid.hpp"
#include "sweep/progress.hpp"
#include "sweep/results_file.hpp"
#include "sweep/runner.hpp"
#include "sweep/scheduler.hpp"
#include "sweep/slurm.hpp"

namespace pkb::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct SweepOptions {
  std::vector<std::string> solutions;
  std::string problems = "all", out, device = "auto", seed, shard, launcher = "local";
  std::string parallel = "1";  // evaluations at once: a count or auto (sweep::evaluations_at_once)
  std::vector<int> worlds;
  sweep::Settings settings;
  int jobs = 0, nodes = 1;
  double deadline = 3600;
  std::vector<std::string> sbatch;
  bool submit = false, wait = false;
};

std::pair<int, int> parse_shard(const std::string& text) {
  size_t slash = text.find('/');
  try {
    if (slash != std::string::npos) {
      int i = std::stoi(text.substr(0, slash)), n = std::stoi(text.substr(slash + 1));
      if (n >= 1 && i >= 0 && i < n) return {i, n};
    }
  } catch (...) {
  }
  throw UsageError("--shard takes INDEX/COUNT with 0 <= INDEX < COUNT (e.g. 0/4), not '" + text + "'");
}

std::string verdict_line(const sweep::Task& t, const eval::Record& line) {
  std::string v = line.verdict ? eval::verdict_name(*line.verdict) : "?";
  char extra[64] = "";
  if (line.speedup) snprintf(extra, sizeof extra, " %.2fx", *line.speedup);
  char wall[32] = "";
  if (line.wall_s) snprintf(wall, sizeof wall, " (%.1f s)", *line.wall_s);
  std::string msg = line.correct() ? "" : "  " + line.message;
  if (msg.size() > 160) msg = msg.substr(0, 157) + "...";
  return t.candidate.problem + " W=" + std::to_string(t.world) + " " + t.candidate.run + "/sample_" +
         std::to_string(t.candidate.sample) + ": " + v + extra + wall + msg;
}

// One line on stderr, refreshed in place, when stderr is a terminal (never into a log): done
// of total, failures so far, the time left, what runs now; and one line per finished
// evaluation on stdout. A ticker redraws it every second, so the estimate counts down during
// long evaluations.
class ProgressView {
 public:
  ProgressView(size_t total, size_t to_build) : tty_(isatty(2)) {
    p_.total = total;
    p_.to_build = to_build;
    if (tty_) ticker_ = std::thread([this] { tick(); });
  }
  ~ProgressView() { finish(); }
  void built() {
    std::lock_guard<std::mutex> lock(mu_);
    ++p_.built;
    draw();
  }
  void start(const sweep::Task& t) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) started_ = std::chrono::steady_clock::now();
    p_.running.push_back(task_name(t));
    draw();
  }
  void result(const sweep::Task& t, const eval::Record& line) {
    std::lock_guard<std::mutex> lock(mu_);
    ++p_.done;
    ++p_.verdicts[line.verdict ? eval::verdict_name(*line.verdict) : "?"];
    p_.elapsed_at_last_end_s = elapsed();
    auto it = std::find(p_.running.begin(), p_.running.end(), task_name(t));
    if (it != p_.running.end()) p_.running.erase(it);
    clear();
    printf("[%zu/%zu] %s\n", p_.done, p_.total, verdict_line(t, line).c_str());
    fflush(stdout);
    draw();
  }
  void finish() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      stop_ = true;
      clear();
    }
    wake_.notify_all();
    if (ticker_.joinable()) ticker_.join();
  }
  const std::map<std::string, int>& verdicts() const { return p_.verdicts; }

 private:
  static std::string task_name(const sweep::Task& t) {
    return t.candidate.problem + " W=" + std::to_string(t.world) + " " + t.candidate.run + "/sample_" +
           std::to_string(t.candidate.sample);
  }
  double elapsed() const {
    return started_ ? std::chrono::duration<double>(std::chrono::steady_clock::now() - *started_).count() : 0;
  }
  void tick() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!wake_.wait_for(lock, std::chrono::seconds(1), [&] { return stop_; })) draw();
  }
  void clear() {
    if (tty_) fprintf(stderr, "\r\033[K");
  }
  void draw() {  // mu_ held
    if (!tty_ || stop_) return;
    p_.elapsed_s = elapsed();
    fprintf(stderr, "\r\033[K%s", p_.line().c_str());
    fflush(stderr);
  }

  bool tty_;
  sweep::Progress p_;
  std::optional<std::chrono::steady_clock::time_point> started_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread ticker_;
};

// The arguments that make a child pkb see the same problems as this one.
std::vector<std::string> registry_args(const Globals& g) {
  std::vector<std::string> a = {"--root", g.root};
  for (auto& d : g.problem_dirs) a.insert(a.end(), {"--problem-dir", d});
  for (auto& l : g.reference_libs) a.insert(a.end(), {"--reference-lib", l});
  return a;
}

// The grid of the sweep's options, with the device resolved (the GPUs are probed).
sweep::GridRequest grid_request(const SweepOptions& o) {
  sweep::GridRequest req;
  req.solutions = o.solutions;
  req.problems = o.problems;
  req.worlds = o.worlds;
  req.settings = o.settings;
  req.settings.device = o.device;
  if (o.device != "cpu") {
    req.gpus = static_cast<int>(launch::probe_devices().value("devices", json::array()).size());
    if (o.device == "cuda" && req.gpus == 0) throw UsageError("--device cuda, but no GPU is visible; use --device cpu");
    req.settings.device = req.gpus > 0 ? "cuda" : "cpu";
  }
  return req;
}

// Checks the options and the grid on the submitting machine, where the user sees the
// errors (not in a task's log); returns how many candidates there are.
size_t count_candidates(Globals& g, const SweepOptions& o) {
  if (!o.shard.empty()) throw UsageError("--shard is for the Slurm tasks themselves; leave it out");
  sweep::GridRequest req;
  req.solutions = o.solutions;
  req.problems = o.problems;
  try {
    return sweep::count_candidates(g.registry(), req);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
}

int sweep_on_slurm(Globals& g, const SweepOptions& o, size_t grid_size) {
  try {  // checked here, where the user sees the error; each node resolves auto for itself
    sweep::evaluations_at_once(o.parallel, 0, 1, 1);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  fs::path dir = fs::absolute(o.out);
  if (fs::is_regular_file(dir))
    throw UsageError("--out " + o.out + " is a file; --launcher slurm writes a folder of task_<i>.jsonl files");
  fs::create_directories(dir);
  const sweep::Settings& s = o.settings;
  sweep::SlurmJob job;
  job.results_dir = dir.string();
  job.workdir = fs::current_path().string();
  job.nodes = o.nodes;
  if (o.device != "cpu" && !o.worlds.empty()) job.gpus_per_node = *std::max_element(o.worlds.begin(), o.worlds.end());
  job.sbatch_options = o.sbatch;
  std::vector<std::string>& a = job.argv;
  a = {launch::self_exe()};
  for (auto& r : registry_args(g)) a.push_back(r);
  a.push_back("sweep");
  for (auto& d : o.solutions) a.insert(a.end(), {"--solutions", d});
  a.insert(a.end(), {"--problems", o.problems, "--device", o.device, "--eval-deadline", std::to_string(o.deadline)});
  if (!o.seed.empty()) a.insert(a.end(), {"--seed", o.seed});
  for (int w : o.worlds) a.insert(a.end(), {"--world-size", std::to_string(w)});
  std::vector<std::string> flags = rank::to_flags(s.eval);
  a.insert(a.end(), flags.begin(), flags.end());
  if (s.timeout > 0) a.insert(a.end(), {"--timeout", std::to_string(s.timeout)});
  if (o.jobs) a.insert(a.end(), {"--jobs", std::to_string(o.jobs)});
  if (o.parallel != "1") a.insert(a.end(), {"--parallel", o.parallel});

  std::string script = (dir / "sweep.sbatch").string();
  std::ofstream file(script);
  file << sweep::slurm_script(job);
  file.close();
  if (!file) throw UsageError("cannot write " + script + "; pick an --out folder you can write to");
  printf("wrote %s: an array of %d task%s sharing %zu candidate%s\n", script.c_str(), o.nodes, o.nodes == 1 ? "" : "s",
         grid_size, grid_size == 1 ? "" : "s");
  if (!o.submit) {
    printf("submit it with: sbatch %s   (or pkb sweep ... --submit); then: pkb report %s\n", script.c_str(),
           dir.c_str());
    return eval::kOk;
  }
  std::string id;
  try {
    if (o.wait) printf("submitting and waiting for the job to end...\n"), fflush(stdout);
    id = sweep::submit(script, o.wait);
  } catch (const std::exception& e) {
    fprintf(stderr, "pkb: error: %s\n", e.what());
    return eval::kInternal;
  }
  printf("%s Slurm job %s; results in %s (pkb report %s)\n", o.wait ? "finished" : "submitted", id.c_str(),
         dir.c_str(), dir.c_str());
  return eval::kOk;
}

// A folder for the evaluations' JSON before it is appended: <results>.scratch, beside the
// results file whose lock the sweep holds, so a sweep killed outright leaves it where the
// same command run again clears it (not in /tmp, where nothing would). Gone with the sweep.
struct ScratchDir {
  std::string path;
  explicit ScratchDir(const std::string& results) : path(results + ".scratch") {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

int sweep_here(Globals& g, SweepOptions& o) {
  std::pair<int, int> share = o.shard.empty() ? std::pair<int, int>{0, 1} : parse_shard(o.shard);
  sweep::GridRequest req = grid_request(o);
  o.settings.device = req.settings.device;
  sweep::Grid planned;
  try {
    planned = sweep::plan_grid(g.registry(), req);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  for (auto& w : planned.warnings) warn(w);
  std::vector<sweep::Task> grid = sweep::shard(planned.tasks, share.first, share.second);
  int largest_world = 1;
  for (auto& t : grid) largest_world = std::max(largest_world, t.world);
  int at_once = 1;
  try {
    at_once = sweep::evaluations_at_once(o.parallel, o.settings.device == "cuda" ? req.gpus : 0,
                                         static_cast<int>(std::thread::hardware_concurrency()), largest_world);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  // Each evaluation takes a GPU at least: more at once than GPUs never run (one GPU: as before).
  if (o.settings.device == "cuda") at_once = std::max(1, std::min(at_once, req.gpus));

  if (fs::is_directory(o.out)) throw UsageError("--out " + o.out + " is a folder; give a .jsonl file");
  if (fs::path(o.out).has_parent_path()) fs::create_directories(fs::path(o.out).parent_path());
  std::unique_ptr<sweep::ResultsFile> results;
  try {
    results = std::make_unique<sweep::ResultsFile>(o.out);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  if (results->torn_bytes())
    warn("cut off a torn last line (" + std::to_string(results->torn_bytes()) + " bytes, from an interrupted run) of " +
         o.out + "; that evaluation runs again");
  if (results->bad_lines())
    warn(o.out + " has " + std::to_string(results->bad_lines()) + " line(s) that are not JSON; left as they are");

  // Every evaluation draws its own secret inputs (what one candidate stored cannot answer
  // another's), unless --seed replays one for all; pkb eval still times each problem's
  // reference once (its timing cache is keyed without the seed).
  std::optional<uint64_t> seed;
  if (!o.seed.empty()) seed = make_seed(o.seed);
  size_t already = 0;
  std::set<std::string> to_build;
  for (auto& t : grid) {
    t.seed = seed;
    if (results->has(t.key)) ++already;
    else to_build.insert(t.candidate.sha256 + t.candidate.device);
  }
  printf("pkb sweep: %zu evaluation%s (%zu already in %s), %zu to compile, device=%s, %s%s\n", grid.size(),
         grid.size() == 1 ? "" : "s", already, o.out.c_str(), to_build.size(), o.settings.device.c_str(),
         seed ? ("seed=" + std::to_string(*seed) + " for every evaluation").c_str() : "fresh inputs per evaluation",
         at_once > 1 ? (", up to " + std::to_string(at_once) + " at once").c_str() : "");
  if (at_once > 1 && o.settings.device == "cuda")
    warn("--parallel: evaluations share the node's CPUs, PCIe and NVSwitch, so their timings are noisier than "
         "one at a time (docs/sweep.md); the results record it (sweep.parallel)");
  fflush(stdout);
  if (already == grid.size()) {
    printf("nothing to do; pkb report %s\n", o.out.c_str());
    return eval::kOk;
  }

  ScratchDir scratch(o.out);
  sweep::RunnerOptions ro;
  const char* exe = std::getenv("PKB_SWEEP_EXE");  // tests substitute a stand-in for pkb build/eval
  ro.pkb = exe && *exe ? exe : launch::self_exe();
  ro.global_args = registry_args(g);
  ro.settings = o.settings;
  ro.jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ro.deadline_s = o.deadline;
  ro.scratch_dir = scratch.path;
  ro.parallel = at_once;
  if (o.settings.device == "cuda") ro.gpus = sweep::visible_gpu_names(std::getenv("CUDA_VISIBLE_DEVICES"), req.gpus);

  ProgressView view(grid.size() - already, to_build.size());
  sweep::Callbacks cb;
  cb.on_built = [&](const sweep::Candidate&, bool) { view.built(); };
  cb.on_start = [&](const sweep::Task& t) { view.start(t); };
  cb.on_result = [&](const sweep::Task& t, const eval::Record& line) { view.result(t, line); };
  // Ctrl-C or scancel: the evaluation in flight dies with pkb (its children follow through
  // PR_SET_PDEATHSIG) and runs again on resume; every finished one is already on disk.
  launch::Interrupts interrupts(launch::Interrupts::Mode::exit_now, false,
                                "\npkb: interrupted; run the same command again to resume (finished evaluations are kept)\n");
  auto t0 = std::chrono::steady_clock::now();
  size_t ran = 0;
  try {
    ran = sweep::run_sweep(grid, *results, ro, cb);
  } catch (const sweep::EvalRejected& e) {
    view.finish();
    throw UsageError(std::string(e.what()) + "; fix the sweep's options and run it again");
  }
  view.finish();
  double minutes = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 60;
  std::string counts;
  for (auto& [v, n] : view.verdicts()) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + v;
  printf("done: %zu evaluation%s in %.1f min (%s); pkb report %s\n", ran, ran == 1 ? "" : "s", minutes,
         counts.c_str(), o.out.c_str());
  return eval::kOk;
}

}  // namespace

void add_sweep_command(CLI::App& app, Globals& g, Action& run) {
  static SweepOptions o;
  auto* cmd = app.add_subcommand("sweep", "Evaluate every candidate under folders of solutions; resumable");
  cmd->add_option("--solutions,--solution", o.solutions,
                  "folders of candidates (pkb generate's output) or files; @reference: every problem's reference as "
                  "its candidate (a sanity run of pkb, not a result)")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--problems", o.problems, "all, a category key (coll, tp, ...) or a comma list of problems");
  cmd->add_option("--out", o.out, "results file (JSON Lines, appended; a re-run resumes); a folder for --launcher slurm")
      ->required();
  cmd->add_option("-w,--world-size", o.worlds, "ranks, one or a comma list (default: visible GPUs; 4 on the CPU device)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--nproc-per-node,--num-gpus", o.worlds, "-w")->delimiter(',')->check(CLI::Range(1, 1024))->group("");
  cmd->add_option("--device", o.device, "cuda, cpu, or auto (CUDA when a GPU is visible)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  add_settings(cmd, o.settings.eval);
  cmd->add_option("--seed", o.seed,
                  "replay one seed in every evaluation (default: each evaluation draws its own secret inputs)");
  cmd->add_option("--timeout", o.settings.timeout, "seconds a candidate may take per phase (pkb eval --timeout)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--eval-deadline", o.deadline, "seconds before a whole evaluation is killed (default 3600)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-j,--jobs", o.jobs, "compilations at once (default: all cores)")->check(CLI::Range(1, 1024));
  cmd->add_option("--parallel", o.parallel,
                  "evaluations at once, each on GPUs of its own, largest W first: a number or auto (default 1: "
                  "nothing shares the node while it is timed)");
  cmd->add_option("--shard", o.shard, "only share INDEX of COUNT of the grid, e.g. 2/8 (what Slurm tasks run)");
  cmd->add_option("--launcher", o.launcher, "local (here), or slurm (write an array job; see --submit)")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_option("--nodes", o.nodes, "slurm: array tasks, one node each")->check(CLI::Range(1, 100000));
  cmd->add_option("--sbatch", o.sbatch, "slurm: one more #SBATCH option, e.g. --sbatch=--partition=gpu (repeatable)");
  cmd->add_flag("--submit", o.submit, "slurm: submit the job with sbatch");
  cmd->add_flag("--wait", o.wait, "slurm: with --submit, wait until every task has ended");
  cmd->callback([&] {
    run = [&] {
      if (o.launcher == "slurm") return sweep_on_slurm(g, o, count_candidates(g, o));
      if (o.submit || o.wait || !o.sbatch.empty() || o.nodes != 1)
        throw UsageError("--nodes, --sbatch, --submit and --wait are for --launcher slurm");
      return sweep_here(g, o);
    };
  });
}

}  // namespace pkb::cli
