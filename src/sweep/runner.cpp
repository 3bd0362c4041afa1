#include "sweep/runner.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "eval/record.hpp"
#include "eval/verdict.hpp"
#include "io/files.hpp"

namespace pkb::sweep {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {


std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  if (last.size() > 400) last = last.substr(0, 400) + "...";
  return last;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Compiles the distinct candidates of the tasks, `jobs` at a time, in task order, so the
// evaluation in front rarely waits and never compiles itself.
class Builder {
 public:
  Builder(const std::vector<const Task*>& tasks, const RunnerOptions& o, const Callbacks& cb, std::mutex& cb_mu)
      : o_(o), cb_(cb), cb_mu_(cb_mu) {
    for (const Task* t : tasks) {
      std::string id = t->candidate.sha256 + "|" + t->candidate.device;
      if (index_.emplace(id, unique_.size()).second) unique_.push_back(&t->candidate);
    }
    done_.assign(unique_.size(), false);
    int n = std::max(1, std::min<int>(o.jobs, static_cast<int>(unique_.size())));
    for (int i = 0; i < n && !unique_.empty(); ++i) threads_.emplace_back([this] { work(); });
  }
  ~Builder() {  // the sweep ended or failed: start no more builds, finish those running
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  void wait_for(const Candidate& c) {
    size_t i = index_.at(c.sha256 + "|" + c.device);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_[i]; });
  }

 private:
  void work() {
    for (size_t i; !stop_ && (i = next_++) < unique_.size();) {
      const Candidate& c = *unique_[i];
      std::vector<std::string> argv = {o_.pkb};
      argv.insert(argv.end(), o_.global_args.begin(), o_.global_args.end());
      argv.insert(argv.end(), {"build", "--solution", c.path, "--device", c.device});
      // A build that fails for any reason is not fatal: pkb eval builds (and judges) it again.
      bool compiled = false;
      try {
        compiled = launch::run_process(argv, o_.deadline_s).ok();
      } catch (const std::exception&) {  // no process could be started: the evaluation will say so
      }
      if (cb_.on_built) {
        std::lock_guard<std::mutex> lock(cb_mu_);
        cb_.on_built(c, compiled);
      }
      std::lock_guard<std::mutex> lock(mu_);
      done_[i] = true;
      cv_.notify_all();
    }
  }

  const RunnerOptions& o_;
  const Callbacks& cb_;
  std::mutex& cb_mu_;
  std::vector<const Candidate*> unique_;
  std::map<std::string, size_t> index_;
  std::vector<bool> done_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
};

}  // namespace

std::vector<std::string> eval_argv(const Task& t, const RunnerOptions& o, const std::string& json_out) {
  const Settings& s = o.settings;
  eval::EvalCommand c;
  c.pkb = o.pkb;
  c.global_args = o.global_args;
  c.problem = t.candidate.problem;
  c.solution = t.candidate.path;
  c.world = t.world;
  c.device = t.candidate.device;
  c.size = s.size;
  c.dtype = s.dtype;
  c.seed = t.seed;
  c.trials = s.trials;
  c.warmup = s.warmup;
  c.iters = s.iters;
  c.timing = s.timing;
  c.timeout = s.timeout;
  c.json_out = json_out;
  return c.argv();
}

eval::RecordHead record_head(const Task& t, const Settings& s) {
  const Candidate& c = t.candidate;
  eval::RecordHead h;
  h.problem = c.problem;
  h.problem_id = c.problem_id;
  h.category = c.category;
  h.candidate_path = c.path;
  h.candidate_abs_path = fs::absolute(c.path).lexically_normal().string();  // pkb eval runs here too
  h.candidate_sha256 = c.sha256;
  h.backend = c.backend;
  h.run = {{"world", t.world},
           {"device", c.device},
           {"size", s.size},
           {"seed", t.seed ? json(std::to_string(*t.seed)) : json()},
           {"trials", s.trials >= 0 ? json(s.trials) : json()},
           {"warmup", s.warmup >= 0 ? json(s.warmup) : json()},
           {"iters", s.iters >= 0 ? json(s.iters) : json()}};
  if (!s.dtype.empty()) h.run["dtype"] = s.dtype;
  return h;
}

json record_for(const Task& t, const Settings& s, const launch::ProcessResult& child, const std::string& json_text,
                double wall_s, double deadline_s) {
  json line = json::parse(json_text, nullptr, false);
  if (!line.is_object() || !line.value("verdict", json()).is_string()) {
    if (!child.timed_out && child.signal == 0 && child.exit_code == eval::kUsage)
      throw EvalRejected("pkb eval refused " + t.candidate.path + ": " + last_line(child.err));
    eval::Verdict verdict = eval::Verdict::crash;
    std::ostringstream why;
    if (child.timed_out) {
      verdict = eval::Verdict::timeout;
      why << "pkb eval overran the sweep's deadline of " << deadline_s << " s and was killed";
    } else if (child.signal) {
      why << "pkb eval was killed by signal " << child.signal << " (" << strsignal(child.signal) << ")";
    } else if (!eval::exit_code_verdict(child.exit_code).empty() && child.exit_code != eval::kOk) {
      // pkb eval's exit code says the verdict a child that left no JSON behind implies.
      verdict = eval::verdict_from_name(eval::exit_code_verdict(child.exit_code));
      why << "pkb eval exited with code " << child.exit_code << " without writing its result";
    } else {
      why << "pkb eval failed (exit code " << child.exit_code << ") without writing its result";
    }
    std::string said = last_line(child.err);
    if (!said.empty()) why << ": " << said;
    line = eval::unmeasured_record(record_head(t, s), verdict, why.str(), "no_result", wall_s);
  }
  line["sweep"] = {{"run", t.candidate.run}, {"sample", t.candidate.sample}, {"task", t.key}};
  return line;
}

size_t run_sweep(const std::vector<Task>& tasks, ResultsFile& out, const RunnerOptions& o, const Callbacks& cb) {
  std::vector<const Task*> todo;
  for (auto& t : tasks)
    if (!out.has(t.key)) todo.push_back(&t);
  if (todo.empty()) return 0;
  fs::create_directories(o.scratch_dir);
  std::mutex cb_mu;
  Builder builder(todo, o, cb, cb_mu);
  size_t ran = 0;
  for (const Task* t : todo) {
    builder.wait_for(t->candidate);
    if (cb.on_start) {
      std::lock_guard<std::mutex> lock(cb_mu);
      cb.on_start(*t);
    }
    std::string json_out = o.scratch_dir + "/eval_" + std::to_string(ran) + ".json";
    fs::remove(json_out);
    auto t0 = std::chrono::steady_clock::now();
    launch::ProcessResult child = launch::run_process(eval_argv(*t, o, json_out), o.deadline_s);
    std::string text = fs::exists(json_out) ? io::read_file(json_out) : "";
    fs::remove(json_out);
    json line = record_for(*t, o.settings, child, text, seconds_since(t0), o.deadline_s);
    out.append(line);
    ++ran;
    if (cb.on_result) {
      std::lock_guard<std::mutex> lock(cb_mu);
      cb.on_result(*t, line);
    }
  }
  return ran;
}

}  // namespace pkb::sweep
