#include "agent/loop.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "agent/feedback.hpp"
#include "build/builder.hpp"
#include "build/sha256.hpp"
#include "eval/record.hpp"
#include "eval/verdict.hpp"
#include "gen/error.hpp"
#include "gen/http.hpp"
#include "gen/protocol.hpp"
#include "gen/work_queue.hpp"
#include "io/files.hpp"
#include "launch/signals.hpp"
#include "sweep/results_file.hpp"
#include "sweep/runner.hpp"
#include "io/text.hpp"

namespace pkb::agent {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

json read_json(const fs::path& p) {
  json j = json::parse(io::read_file(p.string()), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::runtime_error(p.string() + " is not a JSON object; remove it");
  return j;
}

// A turn's result, when there is one pkb can read (an earlier version's may not be).
std::optional<eval::Record> read_record(const fs::path& p) {
  if (!fs::exists(p)) return std::nullopt;
  try {
    return eval::Record::from_json(json::parse(io::read_file(p.string())));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void write_json(const fs::path& p, const json& j) { io::write_file_atomically(p.string(), j.dump(2) + "\n"); }

using io::format;

// A speedup that counts: none when the timing is in doubt (as reports rank them).
double trusted_speedup(const eval::Record& line) {
  if (!line.correct() || eval::timing_in_doubt(line.flags)) return 0;
  return line.speedup.value_or(0);
}

// One sample's conversation and what it has spent, rebuilt from its turn folders.
struct SampleState {
  fs::path dir;
  gen::Conversation conv;
  int finished = 0;  // turns with turn.json
  int64_t tokens_in = 0, tokens_out = 0;
  double wall_s = 0, device_s = 0;
  int evaluated = 0;
  bool done = false;  // the model said DONE
  int best_turn = 0;  // the fastest correct candidate's turn (0: none yet)
  double best_speedup = 0;
  std::optional<double> best_speedup_shown;  // as recorded, in doubt or not
  int last_candidate_turn = 0;
};

struct Job {
  size_t target, problem;
  int sample;
};

class Agent {
 public:
  Agent(const std::vector<gen::Target>& targets, const std::vector<Problem>& problems, const Settings& s,
        const Log& log)
      : targets_(targets), problems_(problems), s_(s), log_(log), stopped_(targets.size()) {
    summary_.models.resize(targets.size());
    for (auto& t : targets) {
      fs::create_directories(t.run_dir);
      std::string path = (fs::path(t.run_dir) / "results.jsonl").string();
      try {
        results_.push_back(std::make_unique<sweep::ResultsFile>(path));
      } catch (const std::runtime_error& e) {
        throw gen::GenError(std::string(e.what()).find("another pkb") != std::string::npos
                                ? t.run_dir + " is being written by another pkb agent; wait for it or pick another --run-name"
                                : e.what());
      }
    }
    std::error_code ec;
    root_ = fs::weakly_canonical(s.root, ec).string();
  }

  Summary run() {
    for (int k = 0; k < s_.samples; ++k)
      for (size_t p = 0; p < problems_.size(); ++p)
        for (size_t t = 0; t < targets_.size(); ++t) jobs_.push_back({t, p, k});
    int n = std::max(1, std::min<int>(s_.jobs, static_cast<int>(jobs_.size())));
    std::vector<std::thread> pool;
    for (int i = 0; i < n; ++i) pool.emplace_back([this] { work(); });
    for (auto& th : pool) th.join();
    return summary_;
  }

 private:
  void work() {
    gen::work_through(
        jobs_, mu_, next_, summary_.fatal, [this] { return halt_.load(); },
        [this](const Job& j) {
          bool stopped = stopped_[j.target];
          if (stopped) ++summary_.models[j.target].not_asked;
          return stopped;
        },
        [this](const Job& j) { run_sample(j); }, [this] { halt_ = true; });
  }

  void say(const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mu_);
    if (log_) log_(line);
  }

  std::string label(const Job& j) const {
    return targets_[j.target].model.name + " " + problems_[j.problem].spec->slug + " #" + std::to_string(j.sample);
  }

  fs::path sample_dir(const Job& j) const {
    return fs::path(targets_[j.target].run_dir) / problems_[j.problem].spec->slug / ("sample_" + std::to_string(j.sample));
  }

  std::string task_key(const Job& j, const std::string& what) const {
    const Problem& p = problems_[j.problem];
    return "agent|" + targets_[j.target].run_name + "|" + p.spec->slug + "|W=" + std::to_string(p.world) +
           "|size=" + s_.eval.settings.size + "|sample=" + std::to_string(j.sample) + "|" + what;
  }

  // The values every template may use, for this sample at turn `turn`.
  gen::Context base_values(const Job& j, int turn, const SampleState& st) const {
    const Problem& p = problems_[j.problem];
    gen::Context v;
    for (auto& name : template_values()) v[name] = "";
    v["turn"] = std::to_string(turn);
    v["turns"] = std::to_string(s_.budget.turns);
    v["turns_left"] = std::to_string(std::max(0, s_.budget.turns - turn));
    v["problem"] = p.spec->slug;
    v["backend_name"] = s_.backend_name;
    v["language"] = s_.tags.empty() ? s_.backend : s_.tags[0];
    v["output_file"] = p.spec->slug + "." + s_.extension;
    v["world"] = std::to_string(p.world);
    v["device"] = s_.eval.device == "cpu" ? "CPU" : "CUDA";
    v["size"] = s_.eval.settings.size;
    if (st.best_turn) {
      v["best_turn"] = std::to_string(st.best_turn);
      v["best_speedup"] = speedup_text(st.best_speedup_shown);
    }
    return v;
  }

  // The sample's first message, made once and kept: a resumed sample goes on with the
  // conversation it started, whatever prompts.toml says now.
  gen::Conversation start(const Job& j, const SampleState& st) {
    fs::path file = st.dir / "prompt.json";
    if (fs::exists(file)) {
      json p = read_json(file);
      return {p.value("system", ""), {{gen::Role::user, p.value("user", "")}}};
    }
    const Problem& p = problems_[j.problem];
    std::string user = p.prompt.user;
    while (!user.empty() && user.back() == '\n') user.pop_back();
    user += "\n\n" + s_.book.render("intro", base_values(j, 0, st)) + "\n";
    write_json(file, {{"system", p.prompt.system}, {"user", user}});
    return {p.prompt.system, {{gen::Role::user, user}}};
  }

  SampleState load(const Job& j) {
    SampleState st;
    st.dir = sample_dir(j);
    fs::create_directories(st.dir);
    st.conv = start(j, st);
    for (int t = 1;; ++t) {
      fs::path td = st.dir / ("turn_" + std::to_string(t));
      if (!fs::exists(td / "turn.json")) break;
      json rec = read_json(td / "turn.json");
      st.finished = t;
      st.tokens_in += rec.value("tokens_in", int64_t(0));
      st.tokens_out += rec.value("tokens_out", int64_t(0));
      st.wall_s += rec.value("wall_s", 0.0);
      st.device_s += rec.value("device_s", 0.0);
      st.done = st.done || rec.value("done", false);
      if (rec.value("evaluated", false)) {
        ++st.evaluated;
        st.last_candidate_turn = t;
        if (auto line = read_record(td / "eval.json")) consider_best(st, t, *line);
      }
      st.conv.messages.push_back({gen::Role::assistant, answer_text(io::read_file((td / "reply.txt").string()))});
      st.conv.messages.push_back({gen::Role::user, io::read_file((td / "feedback.txt").string())});
    }
    return st;
  }

  static std::string answer_text(const std::string& text) {
    // Providers refuse an empty assistant message; an empty answer stays visible as such.
    return text.find_first_not_of(" \t\r\n") == std::string::npos ? "(no answer)" : text;
  }

  static void consider_best(SampleState& st, int turn, const eval::Record& line) {
    if (!line.correct()) return;
    double s = trusted_speedup(line);
    if (st.best_turn && s <= st.best_speedup) return;
    st.best_turn = turn;
    st.best_speedup = s;
    st.best_speedup_shown = line.speedup;
  }

  // Why the sample stops before turn `turn`, or "" when it goes on.
  std::string stop_reason(const SampleState& st, int turn) const {
    const Budget& b = s_.budget;
    if (st.done) return "the model said DONE";
    if (st.best_turn && b.until_speedup && st.best_speedup >= *b.until_speedup)
      return *b.until_speedup > 0 ? "a correct candidate reached the target speedup " + format("%.2fx", *b.until_speedup)
                                  : "a correct candidate (--until-speedup 0)";
    if (turn > b.turns) return "all " + std::to_string(b.turns) + " turns used";
    if (b.tokens > 0 && st.tokens_in + st.tokens_out >= b.tokens)
      return "the token budget (" + std::to_string(b.tokens) + ") is spent";
    if (b.wall_s > 0 && st.wall_s >= b.wall_s) return "the wall-time budget (" + format("%g s", b.wall_s) + ") is spent";
    if (b.device_s > 0 && st.device_s >= b.device_s)
      return "the device-time budget (" + format("%g s", b.device_s) + ") is spent";
    return "";
  }

  void run_sample(const Job& j) {
    SampleState st = load(j);
    for (;;) {
      if (halt_) return;
      int t = st.finished + 1;
      std::string why = stop_reason(st, t);
      if (!why.empty()) {
        finish(j, st, why);
        return;
      }
      if (stopped_[j.target]) {
        std::lock_guard<std::mutex> lock(mu_);
        ++summary_.models[j.target].not_asked;
        return;
      }
      if (!turn(j, st, t)) return;
    }
  }

  // Runs turn `t`; false when the sample cannot go on in this run (a request failed).
  bool turn(const Job& j, SampleState& st, int t) {
    const gen::Target& target = targets_[j.target];
    const Problem& p = problems_[j.problem];
    fs::path td = st.dir / ("turn_" + std::to_string(t));
    fs::create_directories(td);
    auto t0 = Clock::now();
    double waited = 0;  // for the machine, behind other samples' evaluations: not this sample's time

    // The answer: kept from an earlier run that stopped mid-turn, else asked for.
    json reply;
    std::string answer;
    if (fs::exists(td / "reply.json")) {
      reply = read_json(td / "reply.json");
      answer = io::read_file((td / "reply.txt").string());
      reply["resumed"] = true;
    } else {
      gen::HttpRequest req = gen::build_request(target.model, target.key, st.conv);
      write_json(td / "request.json",
                 {{"url", req.url}, {"body", json::parse(gen::redact(req.body, target.key), nullptr, false)}});
      gen::Reply r = gen::request_completion(
          target.model, target.key, st.conv, s_.policy, launch::Interrupts::flag(),
          [&](int attempt, const std::string& why, double wait) {
            say(label(j) + " turn " + std::to_string(t) + ": attempt " + std::to_string(attempt) + " failed (" + why +
                "); retrying in " + format("%.1f s", wait));
          });
      if (r.outcome != gen::Outcome::ok) {
        std::lock_guard<std::mutex> lock(mu_);
        ModelTally& m = summary_.models[j.target];
        if (r.outcome == gen::Outcome::model_stopped && !stopped_[j.target].exchange(true)) m.stop_reason = r.error;
        ++m.failed;
        say(label(j) + " turn " + std::to_string(t) + ": the request failed: " + r.error);
        return false;
      }
      answer = r.completion.text;
      io::write_file_atomically((td / "response.json").string(), r.raw);
      io::write_file_atomically((td / "reply.txt").string(), answer);
      reply = {{"tokens_in", r.completion.tokens_in}, {"tokens_out", r.completion.tokens_out},
               {"finish_reason", r.completion.finish_reason}, {"attempts", r.attempts},
               {"http_status", r.http_status}, {"latency_s", r.latency_s}, {"wall_s", r.wall_s}};
      write_json(td / "reply.json", reply);  // last: the answer is whole
      std::lock_guard<std::mutex> lock(mu_);
      summary_.tokens_in += r.completion.tokens_in;
      summary_.tokens_out += r.completion.tokens_out;
    }
    int64_t tokens_in = reply.value("tokens_in", int64_t(0)), tokens_out = reply.value("tokens_out", int64_t(0));
    st.tokens_in += tokens_in;
    st.tokens_out += tokens_out;

    Request ask = read_request(answer, s_.tags);
    gen::Context v = base_values(j, t, st);
    std::string result, tools, outcome;
    double device_s = 0;
    eval::Record line;
    if (ask.code.found) {
      std::string cand = (td / ("candidate." + s_.extension)).string();
      io::write_file_atomically(cand, ask.code.code);
      std::string eval_stderr;
      auto w0 = Clock::now();
      std::unique_lock<std::mutex> machine(machine_mu_);
      waited += since(w0);
      auto e0 = Clock::now();
      line = evaluate(j, st, t, cand, ask.code.code, eval_stderr);
      device_s += since(e0);
      machine.unlock();
      line.agent = eval::AgentTag{target.model.name, t, st.tokens_in + st.tokens_out, st.wall_s + since(t0) - waited};
      record(j, line);
      ++st.evaluated;
      st.last_candidate_turn = t;
      consider_best(st, t, line);
      if (st.best_turn == t) install_best(j, td / ("candidate." + s_.extension));
      gen::Context r = result_values(line, eval_stderr, scrubber(td, line));
      for (auto& [k, val] : r) v[k] = val;
      v["best_turn"] = st.best_turn ? std::to_string(st.best_turn) : "";
      v["best_speedup"] = st.best_turn ? speedup_text(st.best_speedup_shown) : "";
      result = s_.book.render(verdict_template(line), v);
      outcome = line.verdict ? eval::verdict_name(*line.verdict) : "?";
    } else if (ask.tools.empty() && !ask.done) {
      v["why"] = ask.code.why;
      result = s_.book.render("no_code", v);
      outcome = "no code";
    }
    for (auto& tool : ask.tools) {
      if (tool == kShow) {
        v["show"] = chomp(show_text(*s_.registry, *p.spec, s_.root));
        tools += s_.book.render("show", v) + "\n\n";
      } else if (tool == kShapes) {
        auto w0 = Clock::now();
        std::unique_lock<std::mutex> machine(machine_mu_);
        waited += since(w0);
        auto e0 = Clock::now();
        v["shapes"] = chomp(shapes(p));
        device_s += since(e0);
        machine.unlock();
        tools += s_.book.render("shapes", v) + "\n\n";
      }
      outcome += (outcome.empty() ? "" : ", ") + tool;
    }
    if (ask.done) outcome += (outcome.empty() ? "" : ", ") + std::string(kDone);
    v["result"] = result;
    v["tools"] = tools;
    v["outcome"] = outcome;
    v["best"] = s_.book.render(st.best_turn ? "best" : "no_best", v);
    std::string feedback = s_.book.render("feedback", v) + "\n";
    io::write_file_atomically((td / "feedback.txt").string(), feedback);

    // An answer kept from an earlier run was paid for there, and counts here.
    double wall = std::max(0.0, since(t0) - waited) + (reply.value("resumed", false) ? reply.value("wall_s", 0.0) : 0);
    st.wall_s += wall;
    st.device_s += device_s;
    st.done = st.done || ask.done;
    json rec = {{"turn", t},
                {"outcome", outcome},
                {"evaluated", ask.code.found},
                {"verdict", ask.code.found && line.verdict ? json(eval::verdict_name(*line.verdict)) : json()},
                {"speedup", ask.code.found && line.speedup ? json(*line.speedup) : json()},
                {"tools", ask.tools},
                {"done", ask.done},
                {"extraction", ask.code.why},
                {"tokens_in", tokens_in},
                {"tokens_out", tokens_out},
                {"finish_reason", reply.value("finish_reason", "")},
                {"attempts", reply.value("attempts", 0)},
                {"resumed", reply.value("resumed", false)},
                {"wall_s", wall},
                {"device_s", device_s}};
    write_json(td / "turn.json", rec);  // last: the turn is finished
    st.finished = t;
    st.conv.messages.push_back({gen::Role::assistant, answer_text(answer)});
    st.conv.messages.push_back({gen::Role::user, feedback});
    write_transcript(j, st);

    std::string said = outcome;
    if (ask.code.found && line.correct()) said += " " + speedup_text(line.speedup);
    else if (ask.code.found) said += ": " + line.message.substr(0, 140);
    say(label(j) + " turn " + std::to_string(t) + "/" + std::to_string(s_.budget.turns) + ": " + said + " (" +
        format("%.1f s", wall) + ", " + std::to_string(tokens_in) + "+" + std::to_string(tokens_out) + " tokens)");
    return true;
  }

  // transcript.md: the conversation as the model saw it, verbatim, each message in a fence
  // longer than any inside it.
  void write_transcript(const Job& j, const SampleState& st) {
    auto fence = [](const std::string& text) {
      size_t longest = 0, run = 0;
      for (char c : text) longest = std::max(longest, run = c == '~' ? run + 1 : 0);
      std::string f(std::max<size_t>(4, longest + 1), '~');
      return f + "text\n" + text + (text.empty() || text.back() != '\n' ? "\n" : "") + f + "\n\n";
    };
    std::string md = "# pkb agent: " + problems_[j.problem].spec->slug + ", sample " + std::to_string(j.sample) +
                     ", " + targets_[j.target].model.name + "\n\nEvery message of the conversation in order, as the "
                     "model was sent it and answered. pkb's last feedback goes with the next turn's request.\n\n"
                     "## System prompt\n\n" + fence(st.conv.system);
    int turn = 0;
    for (size_t i = 0; i < st.conv.messages.size(); ++i) {
      const gen::Message& m = st.conv.messages[i];
      if (m.role == gen::Role::assistant) md += "## Turn " + std::to_string(++turn) + ": the model\n\n";
      else md += i == 0 ? std::string("## Turn 1: pkb's prompt\n\n") : "## Turn " + std::to_string(turn) + ": pkb's feedback\n\n";
      md += fence(m.text);
    }
    io::write_file_atomically((st.dir / "transcript.md").string(), md);
  }

  // `pkb eval` on the candidate, as a results line (the sweep's rules: a child that wrote no
  // result gets the verdict its exit says).
  eval::Record evaluate(const Job& j, const SampleState& st, int t, const std::string& cand, const std::string& code,
                std::string& eval_stderr) {
    const Problem& p = problems_[j.problem];
    fs::path td = st.dir / ("turn_" + std::to_string(t));
    std::string json_out = (td / "eval.json").string();
    fs::remove(json_out);
    auto t0 = Clock::now();
    launch::ProcessResult child =
        launch::run_process(eval_argv(s_.eval, p.spec->slug, p.world, cand, json_out), s_.eval.deadline_s);
    std::string text = fs::exists(json_out) ? io::read_file(json_out) : "";
    eval_stderr = child.err;
    sweep::Candidate c;
    c.path = cand;
    c.problem = p.spec->slug;
    c.problem_id = p.spec->id;
    c.category = p.spec->category;
    c.run = targets_[j.target].run_name;
    c.sample = j.sample;
    c.backend = s_.backend;
    c.device = s_.eval.device;
    c.sha256 = build::sha256_hex(code);
    sweep::Settings ss;
    ss.device = s_.eval.device;
    ss.eval = s_.eval.settings;
    ss.timeout = s_.eval.timeout;
    sweep::Task task{c, p.world, 0, task_key(j, "turn=" + std::to_string(t))};
    eval::Record line;
    try {
      line = sweep::record_for(task, ss, child, text, since(t0), s_.eval.deadline_s);
    } catch (const sweep::EvalRejected& e) {
      throw std::runtime_error(std::string(e.what()) + " (pkb agent's command for pkb eval; a bug to report)");
    }
    if (text.empty()) write_json(json_out, line.to_json());  // the turn's folder always holds its result
    return line;
  }

  void record(const Job& j, const eval::Record& line) {
    std::lock_guard<std::mutex> lock(results_mu_);
    sweep::ResultsFile& f = *results_[j.target];
    if (!f.has(line.sweep->task)) f.append(line);
  }

  // What the model must not read in pkb's words: where pkb and its files are, the seed.
  Scrubber scrubber(const fs::path& turn_dir, const eval::Record& line) const {
    Scrubber s;
    std::error_code ec;
    std::string td = fs::weakly_canonical(fs::absolute(turn_dir), ec).string();
    s.add(td + "/", "");
    s.add(fs::absolute(turn_dir).string() + "/", "");
    s.add(turn_dir.string() + "/", "");
    s.add(build::default_cache_dir(), "<cache>");
    s.add(root_, "<pkb>");
    const std::string& seed = line.run.seed;
    if (seed.size() >= 6) s.add(seed, "<seed>");
    return s;
  }

  std::string shapes(const Problem& p) {
    std::string key = p.spec->slug + "|" + std::to_string(p.world);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shapes_.count(key)) return shapes_[key];
    }
    launch::ProcessResult r = launch::run_process(dryrun_argv(s_.eval, p.spec->slug, p.world), s_.eval.deadline_s);
    std::string text = shapes_text(r);
    std::lock_guard<std::mutex> lock(mu_);
    if (r.ok()) shapes_[key] = text;
    return text;
  }

  void install_best(const Job& j, const fs::path& candidate) {
    fs::path dst = sample_dir(j);
    dst += "." + s_.extension;
    std::string code = io::read_file(candidate.string());
    if (!fs::exists(dst) || io::read_file(dst.string()) != code) io::write_file_atomically(dst.string(), code);
  }

  // The sample ran its course: its candidate file (the best correct one, else the last
  // one, else one that says there was none), and a results line when nothing was evaluated
  // so that pass@k counts the sample.
  void finish(const Job& j, const SampleState& st, const std::string& why) {
    const Problem& p = problems_[j.problem];
    fs::path file = sample_dir(j);
    file += "." + s_.extension;
    std::string ext = "candidate." + s_.extension;
    if (st.best_turn)
      install_best(j, st.dir / ("turn_" + std::to_string(st.best_turn)) / ext);
    else if (st.last_candidate_turn)
      install_best(j, st.dir / ("turn_" + std::to_string(st.last_candidate_turn)) / ext);
    else {
      std::string note = "pkb agent: the model answered no code in " + std::to_string(st.finished) + " turn(s); see " +
                         st.dir.filename().string() + "/";
      io::write_file_atomically(file.string(),
                                s_.extension == "py" ? "raise SystemExit(\"" + note + "\")\n" : "#error \"" + note + "\"\n");
    }
    if (!st.evaluated) {
      eval::Record head;
      head.problem = p.spec->slug;
      head.problem_id = p.spec->id;
      head.category = p.spec->category;
      head.candidate = {file.string(), "", build::sha256_hex(io::read_file(file.string())), s_.backend};
      head.run.world = p.world;
      head.run.device = s_.eval.device;
      head.run.size = s_.eval.settings.size;
      eval::Record line = eval::unmeasured_record(
          head, eval::Verdict::compile_error, "the model answered no code in " + std::to_string(st.finished) + " turn(s)",
          "no_code", 0.0);
      line.sweep = eval::SweepTag{targets_[j.target].run_name, task_key(j, "no_code,turn=" + std::to_string(st.finished)),
                                  j.sample, std::nullopt, std::nullopt};
      line.agent = eval::AgentTag{targets_[j.target].model.name, std::max(1, st.finished), st.tokens_in + st.tokens_out,
                                  st.wall_s};
      record(j, line);
    }
    json summary = {{"problem", p.spec->slug},
                    {"sample", j.sample},
                    {"run", targets_[j.target].run_name},
                    {"model", targets_[j.target].model.name},
                    {"turns", st.finished},
                    {"evaluated", st.evaluated},
                    {"stopped", why},
                    {"best_turn", st.best_turn ? json(st.best_turn) : json()},
                    {"best_speedup", st.best_turn && st.best_speedup_shown ? json(*st.best_speedup_shown) : json()},
                    {"candidate", file.filename().string()},
                    {"tokens_in", st.tokens_in},
                    {"tokens_out", st.tokens_out},
                    {"wall_s", st.wall_s},
                    {"device_s", st.device_s}};
    write_json(st.dir / "sample.json", summary);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ModelTally& m = summary_.models[j.target];
      ++m.finished;
      m.correct += st.best_turn > 0;
    }
    say(label(j) + ": " + why + "; " +
        (st.best_turn ? "best correct candidate from turn " + std::to_string(st.best_turn) + " (" +
                            speedup_text(st.best_speedup_shown) + ")"
                      : std::string("no correct candidate")) +
        " -> " + file.string());
  }

  const std::vector<gen::Target>& targets_;
  const std::vector<Problem>& problems_;
  const Settings& s_;
  const Log& log_;
  std::string root_;
  std::vector<std::unique_ptr<sweep::ResultsFile>> results_;  // per target
  std::mutex mu_;          // summary_, next_, shapes_
  std::mutex log_mu_;
  std::mutex results_mu_;
  std::mutex machine_mu_;  // one evaluation or dryrun at a time: they share the machine
  Summary summary_;
  std::vector<Job> jobs_;
  size_t next_ = 0;
  std::atomic<bool> halt_{false};
  std::vector<std::atomic<bool>> stopped_;  // per target: a request was refused for good
  std::map<std::string, std::string> shapes_;
};

}  // namespace

std::string run_name(const std::string& model, const std::string& backend, const std::string& precision,
                     const std::string& hardware, const std::string& shots) {
  return gen::run_name(model, backend, precision, hardware, shots) + "_agent";
}

Summary run_agent(const std::vector<gen::Target>& targets, const std::vector<Problem>& problems, const Settings& s,
                  const Log& log) {
  gen::http_global_init();
  return Agent(targets, problems, s, log).run();
}

}  // namespace pkb::agent
