#include "sweep/runner.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "eval/record.hpp"
#include "eval/verdict.hpp"
#include "io/clock.hpp"
#include "io/files.hpp"
#include "launch/cpus.hpp"
#include "sweep/scheduler.hpp"

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

using io::seconds_since;

// Compiles the distinct candidates of the tasks, `jobs` at a time, in the order they will
// start, so the evaluation in front rarely waits and never compiles itself. `on_done` is
// called after each build (to wake the loop that starts evaluations).
class Builder {
 public:
  Builder(const std::vector<const Task*>& tasks, const RunnerOptions& o, const Callbacks& cb, std::mutex& cb_mu,
          std::function<void()> on_done)
      : o_(o), cb_(cb), cb_mu_(cb_mu), on_done_(std::move(on_done)) {
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
  bool built(const Candidate& c) {
    size_t i = index_.at(c.sha256 + "|" + c.device);
    std::lock_guard<std::mutex> lock(mu_);
    return done_[i];
  }

 private:
  void work() {
    for (size_t i; !stop_ && (i = next_++) < unique_.size();) {
      const Candidate& c = *unique_[i];
      std::vector<std::string> argv = {o_.pkb};
      argv.insert(argv.end(), o_.global_args.begin(), o_.global_args.end());
      argv.insert(argv.end(), {"build", "--solution", c.path, "--device", c.device});
      // A build that fails for any reason is not fatal: pkb eval builds (and judges) it again.
      // The reference as the candidate has nothing to build.
      bool compiled = c.backend == "reference";
      try {
        if (!compiled) compiled = launch::run_process(argv, o_.deadline_s).ok();
      } catch (const std::exception&) {  // no process could be started: the evaluation will say so
      }
      if (cb_.on_built) {
        std::lock_guard<std::mutex> lock(cb_mu_);
        cb_.on_built(c, compiled);
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_[i] = true;
      }
      on_done_();
    }
  }

  const RunnerOptions& o_;
  const Callbacks& cb_;
  std::mutex& cb_mu_;
  std::function<void()> on_done_;
  std::vector<const Candidate*> unique_;
  std::map<std::string, size_t> index_;
  std::vector<bool> done_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

// An evaluation that ended: its line, or why there is none (pkb eval refused its command line).
struct Ended {
  size_t id = 0;
  eval::Record line;
  std::exception_ptr error;
};

// The evaluations running, each a thread waiting on its pkb eval child. The sweep's one
// thread takes what ended (appends, reports); a thread that ended is joined then, and every
// one before the sweep returns, whatever it throws.
class Running {
 public:
  ~Running() {
    for (auto& [id, t] : threads_) t.join();
  }
  void start(size_t id, std::function<Ended()> evaluate) {
    threads_[id] = std::thread([this, id, evaluate = std::move(evaluate)] {
      Ended e;
      try {
        e = evaluate();
      } catch (...) {
        e.error = std::current_exception();
      }
      e.id = id;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ended_.push_back(std::move(e));
      }
      wake();
    });
  }
  // Waits until an evaluation has ended or `more_built` (checked under the lock) holds;
  // returns the evaluations that ended, their threads joined.
  std::vector<Ended> wait(const std::function<bool()>& more_built) {
    std::vector<Ended> out;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !ended_.empty() || more_built(); });
      out.swap(ended_);
    }
    for (auto& e : out) {
      threads_.at(e.id).join();
      threads_.erase(e.id);
    }
    return out;
  }
  void wake() {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Ended> ended_;
  std::map<size_t, std::thread> threads_;
};

}  // namespace

std::string cpu_share(const std::vector<int>& allowed, const std::vector<int>& on, size_t gpus) {
  std::string list;
  const size_t n = allowed.size();
  for (int g : on) {
    size_t from = n * static_cast<size_t>(g) / gpus, to = n * (static_cast<size_t>(g) + 1) / gpus;
    if (from == to) return "";
    for (size_t i = from; i < to; ++i) list += (list.empty() ? "" : ",") + std::to_string(allowed[i]);
  }
  return list;
}

std::vector<std::string> eval_argv(const Task& t, const RunnerOptions& o, const std::string& json_out,
                                   const std::string& cpus) {
  const Settings& s = o.settings;
  eval::EvalCommand c;
  c.pkb = o.pkb;
  c.global_args = o.global_args;
  c.problem = t.candidate.problem;
  c.solution = t.candidate.path;
  c.world = t.world;
  c.device = t.candidate.device;
  c.settings = s.eval;
  c.seed = t.seed;
  c.timeout = s.timeout;
  c.cpus = cpus;
  c.json_out = json_out;
  return c.argv();
}

eval::Record record_head(const Task& t, const Settings& s) {
  const Candidate& c = t.candidate;
  eval::Record r;
  r.problem = c.problem;
  r.problem_id = c.problem_id;
  r.category = c.category;
  r.candidate = {c.path, fs::absolute(c.path).lexically_normal().string(), c.sha256, c.backend};  // pkb eval runs here too
  r.run.world = t.world;
  r.run.device = c.device;
  r.run.size = s.eval.size;
  r.run.dtype = s.eval.dtype;
  if (t.seed) r.run.seed = std::to_string(*t.seed);
  r.run.trials = s.eval.trials;
  r.run.warmup = s.eval.warmup;
  r.run.iters = s.eval.iters;
  r.run.settings = rank::to_json(s.eval);
  return r;
}

eval::Record record_for(const Task& t, const Settings& s, const launch::ProcessResult& child,
                        const std::string& json_text, double wall_s, double deadline_s) {
  std::optional<eval::Record> line;
  std::string unreadable;
  json j = json::parse(json_text, nullptr, false);
  if (eval::Record::is_record(j)) {
    try {
      line = eval::Record::from_json(j);
    } catch (const std::exception& e) {
      unreadable = e.what();
    }
  }
  if (!line) {
    if (!child.timed_out && child.signal == 0 && child.exit_code == eval::kUsage)
      throw EvalRejected("pkb eval refused " + t.candidate.path + ": " + last_line(child.err));
    eval::Verdict verdict = eval::Verdict::crash;
    std::ostringstream why;
    if (!unreadable.empty()) {
      why << "pkb eval wrote a result pkb cannot read (" << unreadable << ")";
    } else if (child.timed_out) {
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
  line->sweep = eval::SweepTag{t.candidate.run, t.key, t.candidate.sample, std::nullopt, std::nullopt};
  return *line;
}

namespace {

// The reference as the candidate: every pending task of one W in one `pkb eval` child, the
// problems in turn on one start of the ranks (starting 2 W processes that load libtorch and
// make CUDA contexts costs more than most problems' trials). Each problem's line is recorded
// as its own task's, as one child's would be; a problem the child left no line for (it died
// on the way) gets the line its exit implies. Run alone, before the rest.
size_t run_reference_batches(std::vector<const Task*>& todo, ResultsFile& out, const RunnerOptions& o,
                             const Callbacks& cb) {
  std::map<int, std::vector<const Task*>> by_world;
  std::vector<const Task*> rest;
  for (const Task* t : todo) {
    if (t->candidate.backend == "reference") by_world[t->world].push_back(t);
    else rest.push_back(t);
  }
  todo = rest;
  size_t ran = 0;
  for (auto& [world, batch] : by_world) {
    for (const Task* t : batch)
      if (cb.on_start) cb.on_start(*t);
    // The first task's command line, with every problem of the batch after its own.
    std::string json_out = o.scratch_dir + "/reference.jsonl";
    std::vector<std::string> argv = eval_argv(*batch.front(), o, json_out), more;
    for (size_t i = 1; i < batch.size(); ++i) more.push_back(batch[i]->candidate.problem);
    argv.insert(std::find(argv.begin(), argv.end(), "--problem") + 2, more.begin(), more.end());
    fs::remove(json_out);
    auto t0 = std::chrono::steady_clock::now();
    launch::ProcessResult child = launch::run_process(argv, o.deadline_s * static_cast<double>(batch.size()));
    double wall = seconds_since(t0);
    std::map<std::string, std::string> line_of;  // problem -> its record
    if (fs::exists(json_out)) {
      // One record per line; a batch of one problem is pkb eval's single record, indented.
      std::string text = io::read_file(json_out);
      json whole = json::parse(text, nullptr, false);
      std::istringstream lines(whole.is_object() ? whole.dump() : text);
      for (std::string l; std::getline(lines, l);) {
        json j = json::parse(l, nullptr, false);
        if (eval::Record::is_record(j)) line_of[j["problem"].get<std::string>()] = l;
      }
      fs::remove(json_out);
    }
    for (const Task* t : batch) {
      eval::Record line = record_for(*t, o.settings, child, line_of[t->candidate.problem], wall / batch.size(), o.deadline_s);
      line.sweep->batch = static_cast<int>(batch.size());  // evaluated in turn with these others on one start of the ranks
      out.append(line);
      ++ran;
      if (cb.on_result) cb.on_result(*t, line);
    }
  }
  return ran;
}

}  // namespace

size_t run_sweep(const std::vector<Task>& tasks, ResultsFile& out, const RunnerOptions& o, const Callbacks& cb) {
  std::vector<const Task*> todo;
  for (auto& t : tasks)
    if (!out.has(t.key)) todo.push_back(&t);
  if (todo.empty()) return 0;
  fs::create_directories(o.scratch_dir);
  size_t batched = run_reference_batches(todo, out, o, cb);
  if (todo.empty()) return batched;

  // The order evaluations start in: the grid's, or largest W first when packed.
  std::vector<Waiting> waiting;
  for (size_t i = 0; i < todo.size(); ++i)
    waiting.push_back({i, todo[i]->world});
  if (o.parallel > 1) waiting = largest_first(waiting);
  std::vector<const Task*> build_order;
  for (auto& w : waiting) build_order.push_back(todo[w.id]);

  std::vector<int> gpus;
  for (size_t g = 0; g < o.gpus.size(); ++g) gpus.push_back(static_cast<int>(g));
  Packer packer(gpus, o.parallel);
  std::mutex cb_mu;
  std::atomic<size_t> builds_done{0};
  size_t builds_seen = 0;
  Running running;  // declared before the builder, so it is destroyed (joined) after it
  Builder builder(build_order, o, cb, cb_mu, [&] {
    ++builds_done;
    running.wake();
  });

  auto evaluate = [&o](const Task* t, size_t id, const std::vector<int>& on) {
    // One evaluation of several at once sees only its own GPUs; alone, it sees the node as before.
    std::vector<std::pair<std::string, std::string>> env;
    std::string cpus;  // and its own share of the CPUs, where its timed threads are pinned
    if (o.parallel > 1 && !on.empty()) {
      std::string visible;
      for (int g : on) visible += (visible.empty() ? "" : ",") + o.gpus[static_cast<size_t>(g)];
      env.emplace_back("CUDA_VISIBLE_DEVICES", visible);
      cpus = cpu_share(launch::allowed_cpus(), on, o.gpus.size());
    }
    std::string json_out = o.scratch_dir + "/eval_" + std::to_string(id) + ".json";
    return [&o, t, json_out, env, cpus] {
      fs::remove(json_out);
      auto t0 = std::chrono::steady_clock::now();
      launch::ProcessResult child = launch::run_process(eval_argv(*t, o, json_out, cpus), o.deadline_s, env);
      std::string text = fs::exists(json_out) ? io::read_file(json_out) : "";
      fs::remove(json_out);
      Ended e;
      e.line = record_for(*t, o.settings, child, text, seconds_since(t0), o.deadline_s);
      return e;
    };
  };

  size_t ran = 0;
  std::exception_ptr rejected;  // once set, nothing more starts
  while (true) {
    builds_seen = builds_done;  // before looking: a build that ends after this wakes the wait below
    if (!rejected) {
      // Those whose candidate is built, up to the first that is not: builds go in this order.
      std::vector<Waiting> ready;
      for (auto& w : waiting) {
        if (!builder.built(todo[w.id]->candidate)) break;
        ready.push_back(w);
      }
      for (const Assignment& a : packer.assign(ready)) {
        const Task& t = *todo[a.id];
        waiting.erase(std::find_if(waiting.begin(), waiting.end(), [&](const Waiting& w) { return w.id == a.id; }));
        if (cb.on_start) {
          std::lock_guard<std::mutex> lock(cb_mu);
          cb.on_start(t);
        }
        running.start(a.id, evaluate(&t, a.id, a.gpus));
      }
    }
    if (packer.running() == 0 && (waiting.empty() || rejected)) break;
    for (Ended& e : running.wait([&] { return builds_done != builds_seen; })) {
      packer.finished(e.id);
      if (e.error) {
        if (!rejected) rejected = e.error;
        continue;
      }
      if (o.parallel > 1) e.line.sweep->parallel = o.parallel;  // its timing shared the node
      out.append(e.line);
      ++ran;
      if (cb.on_result) {
        std::lock_guard<std::mutex> lock(cb_mu);
        cb.on_result(*todo[e.id], e.line);
      }
    }
  }
  if (rejected) std::rethrow_exception(rejected);
  return batched + ran;
}

}  // namespace pkb::sweep
