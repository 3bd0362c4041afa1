#include "gen/runner.hpp"

#include <atomic>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "gen/error.hpp"
#include "gen/extract.hpp"
#include "gen/http.hpp"
#include "gen/protocol.hpp"
#include "gen/work_queue.hpp"
#include "io/files.hpp"
#include "launch/signals.hpp"

namespace pkb::gen {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;  // manifest fields in reading order

namespace {

struct Job {
  size_t target, task;
  int sample;
};

std::string sample_base(const Target& t, const Task& task, int k) {
  return (fs::path(t.run_dir) / task.problem / ("sample_" + std::to_string(k))).string();
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

const char* status_of(Outcome o) {
  switch (o) {
    case Outcome::ok: return "ok";
    case Outcome::failed: return "failed";
    case Outcome::model_stopped: return "model_stopped";
    case Outcome::interrupted: return "interrupted";
  }
  return "?";
}

// Appends whole lines from many threads; each line is flushed so a crash loses none.
class Manifest {
 public:
  void append(const std::string& path, const ordered_json& line) {
    std::lock_guard<std::mutex> lock(mu_);
    std::ofstream f(path, std::ios::app);
    f << line.dump() << "\n";
    f.flush();
    if (!f) throw std::runtime_error("cannot append to " + path);
  }

 private:
  std::mutex mu_;
};

}  // namespace

Model model_for_sample(const Model& m, int sample) {
  Model out = m;
  if (out.seed) *out.seed += sample;
  return out;
}

std::vector<int> pending_requests(const std::vector<Target>& targets, const std::vector<Task>& tasks,
                                  const RunSettings& s) {
  std::vector<int> n(targets.size(), 0);
  for (int k = 0; k < s.samples; ++k)
    for (auto& task : tasks)
      for (size_t t = 0; t < targets.size(); ++t)
        n[t] += s.force || !fs::exists(sample_base(targets[t], task, k) + ".response.json");
  return n;
}

std::string run_name(const std::string& model, const std::string& backend, const std::string& precision,
                     const std::string& hardware, const std::string& shots) {
  return model_slug(model) + "_" + backend + "_" + precision + "_" + hardware + "_" + shots;
}

namespace {

// One run_generation call: the job list, the workers' shared state, and what each answer
// becomes on disk.
class Generation {
 public:
  Generation(const std::vector<Target>& targets, const std::vector<Task>& tasks, const RunSettings& s,
             Progress& progress)
      : targets_(targets), tasks_(tasks), s_(s), progress_(progress), stopped_(targets.size()) {
    summary_.models.resize(targets.size());
  }

  RunSummary run() {
    plan();
    launch::Interrupts interrupts;  // Ctrl-C: finish what is in flight, then stop
    progress_.begin(static_cast<int>(jobs_.size()));
    int n = std::max(1, std::min<int>(s_.jobs, static_cast<int>(jobs_.size())));
    active_ = n;
    std::vector<std::thread> pool;
    for (int i = 0; i < n; ++i) pool.emplace_back([this] { work(); });
    while (active_ > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      progress_.tick();
    }
    for (auto& th : pool) th.join();
    progress_.end();
    summary_.interrupted = launch::Interrupts::requested() && summary_.fatal.empty();
    for (; next_ < jobs_.size(); ++next_) ++summary_.models[jobs_[next_].target].not_asked;
    return summary_;
  }

 private:
  // Sample-major order: an interrupted run has sample 0 of every problem first; models
  // interleave so that one provider's rate limit does not idle the pool.
  void plan() {
    for (int k = 0; k < s_.samples; ++k)
      for (size_t p = 0; p < tasks_.size(); ++p)
        for (size_t t = 0; t < targets_.size(); ++t) {
          if (!s_.force && fs::exists(sample_base(targets_[t], tasks_[p], k) + ".response.json"))
            ++summary_.models[t].skipped;
          else
            jobs_.push_back({t, p, k});
        }
    // The prompt beside its samples, named by the hash their manifest lines carry.
    for (auto& j : jobs_) {
      const Prompt& p = tasks_[j.task].prompt;
      fs::path file = fs::path(targets_[j.target].run_dir) / tasks_[j.task].problem / ("prompt-" + p.hash() + ".md");
      if (!fs::exists(file)) io::write_file_atomically(file.string(), "# system\n\n" + p.system + "\n# user\n\n" + p.user);
    }
  }

  void work() {
    work_through(
        jobs_, mu_, next_, summary_.fatal, [] { return launch::Interrupts::requested(); },
        [this](const Job& j) {
          bool stopped = stopped_[j.target];
          if (stopped) ++summary_.models[j.target].not_asked;
          return stopped;
        },
        [this](const Job& j) { ask(j); }, [] { launch::Interrupts::request(); });
    --active_;
  }

  void ask(const Job& j) {
    const Target& t = targets_[j.target];
    const Task& task = tasks_[j.task];
    std::string label = t.model.name + " " + task.problem + " #" + std::to_string(j.sample);
    progress_.started();
    Model model = model_for_sample(t.model, j.sample);
    Reply r =
        request_completion(model, t.key, task.prompt, s_.policy, launch::Interrupts::flag(),
                           [&](int, const std::string& why, double wait) { progress_.retrying(label, why, wait); });
    std::optional<double> cost = model.cost_usd(r.completion.tokens_in, r.completion.tokens_out);
    auto opt = [](auto v) { return v ? ordered_json(*v) : ordered_json(nullptr); };
    ordered_json line = {{"time", now_utc()},
                         {"run", t.run_name},
                         {"model", t.model.name},
                         {"provider", t.model.provider.name},
                         {"model_id", t.model.id},
                         {"problem", task.problem},
                         {"sample", j.sample},
                         {"status", status_of(r.outcome)},
                         {"prompt_hash", task.prompt.hash()},
                         {"attempts", r.attempts},
                         {"http_status", r.http_status},
                         {"latency_s", r.latency_s},
                         {"wall_s", r.wall_s},
                         {"tokens_in", r.completion.tokens_in},
                         {"tokens_out", r.completion.tokens_out},
                         {"cost_usd", opt(cost)},
                         {"sampling",
                          {{"temperature", opt(model.temperature)},
                           {"top_p", opt(model.top_p)},
                           {"seed", model.takes_seed() ? opt(model.seed) : ordered_json(nullptr)},
                           {"max_tokens", model.max_tokens}}},
                         {"finish_reason", r.completion.finish_reason},
                         {"code", nullptr},
                         {"response", nullptr},
                         {"extraction", nullptr},
                         {"error", r.error.empty() ? ordered_json(nullptr) : ordered_json(r.error)}};
    line.update(s_.labels);
    if (r.outcome == Outcome::ok) save(t, sample_base(t, task, j.sample), r, line);
    if (r.outcome == Outcome::model_stopped && !stopped_[j.target].exchange(true)) {
      progress_.notice(t.model.name + " stopped: " + r.error);
      std::lock_guard<std::mutex> lock(mu_);
      summary_.models[j.target].stop_reason = r.error;
    }
    manifest_.append((fs::path(t.run_dir) / "manifest.jsonl").string(), line);
    std::string status = line["status"];
    progress_.finished(label, status, r.completion.tokens_in, r.completion.tokens_out, r.wall_s,
                       line["error"].is_null() ? "" : line["error"].get<std::string>());

    std::lock_guard<std::mutex> lock(mu_);
    ModelTally& m = summary_.models[j.target];
    summary_.tokens_in += r.completion.tokens_in;
    summary_.tokens_out += r.completion.tokens_out;
    if (status != "interrupted") {
      ++m.requests;
      m.tokens_in += r.completion.tokens_in;
      m.tokens_out += r.completion.tokens_out;
      m.latency_s += r.latency_s;
      if (cost) m.cost_usd = m.cost_usd.value_or(0) + *cost;
    }
    int& count = status == "ok"            ? m.ok
                 : status == "no_code"     ? m.no_code
                 : status == "interrupted" ? m.not_asked
                                           : m.failed;
    ++count;
  }

  // The code, then the raw answer, which marks the sample done. An answer without code still
  // gets a code file, one that cannot compile and says why: a sweep then scores the sample
  // as a compile error instead of skipping it, so pass@k counts the model's failure.
  void save(const Target& t, const std::string& base, const Reply& r, ordered_json& line) {
    Extraction x = extract_code(r.completion.text, s_.tags);
    line["extraction"] = x.why;
    std::string code = base + "." + s_.extension;
    if (x.found) {
      io::write_file_atomically(code, x.code);
    } else {
      line["status"] = "no_code";
      line["error"] = x.why;
      std::string why = "pkb generate: the model's answer held no code (" + x.why + "); see " +
                        fs::path(base).filename().string() + ".response.json";
      io::write_file_atomically(code, s_.extension == "py" ? "raise SystemExit(\"" + why + "\")\n" : "#error \"" + why + "\"\n");
    }
    line["code"] = fs::path(code).lexically_relative(t.run_dir).string();
    std::string response = base + ".response.json";
    io::write_file_atomically(response, r.raw);
    line["response"] = fs::path(response).lexically_relative(t.run_dir).string();
  }

  const std::vector<Target>& targets_;
  const std::vector<Task>& tasks_;
  const RunSettings& s_;
  Progress& progress_;
  Manifest manifest_;
  std::mutex mu_;  // guards summary_ and next_
  RunSummary summary_;
  std::vector<Job> jobs_;
  size_t next_ = 0;
  std::vector<std::atomic<bool>> stopped_;  // per target: a request was refused for good
  std::atomic<int> active_{0};
};

}  // namespace

RunSummary run_generation(const std::vector<Target>& targets, const std::vector<Task>& tasks, const RunSettings& s,
                          Progress& progress) {
  http_global_init();
  return Generation(targets, tasks, s, progress).run();
}

}  // namespace pkb::gen
