// pkb sweep end to end with a stand-in for pkb build/eval (tests/sweep/fake_pkb.py) that can
// end an evaluation in every way, quickly: every evaluation gets exactly one line, a re-run
// resumes, a torn line is repaired, a SIGKILL loses nothing and leaves no process, Slurm
// shares cover the grid once, and bad input gets one error line. Then --parallel: side by
// side, a problem's evaluations waiting for its first correct one, each child on GPUs of its
// own; and the progress line on a terminal.
#include <gtest/gtest.h>

#include <map>
#include <sys/stat.h>
#include <sys/wait.h>

#include "launch/subprocess.hpp"
#include "sweep/runner.hpp"
#include "sweep_support.hpp"

using namespace pkbtest;
using namespace sweeptest;

namespace {

struct FakeSweep {
  fs::path dir, solutions, out, log, fake;

  explicit FakeSweep(const std::string& name) {
    dir = temp_dir(name);
    solutions = dir / "solutions_cpu";
    out = dir / "results.jsonl";
    log = dir / "fake.log";
    fake = dir / "fake_pkb";
    // A wrapper, so the stand-in runs whatever the checkout's file mode.
    write_file(fake, "#!/bin/sh\nexec '" + std::string(PKB_PYTHON) + "' '" + PKB_SOURCE_DIR +
                         "/tests/sweep/fake_pkb.py' \"$@\"\n");
    chmod(fake.c_str(), 0755);
  }
  void candidate(const std::string& problem, int sample, const std::string& how) {
    write_file(solutions / "fake" / problem / ("sample_" + std::to_string(sample) + ".cpp"),
               "// FAKE: " + how + "\n// " + problem + " " + std::to_string(sample) + "\n");
  }
  std::vector<std::pair<std::string, std::string>> env() const {
    return {{"PKB_SWEEP_EXE", fake.string()}, {"FAKE_LOG", log.string()}};
  }
  std::vector<std::string> args(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> a = {"sweep", "--solutions", solutions.string(), "--device", "cpu", "-w", "4",
                                  "--out", out.string()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  PkbRun run(const std::vector<std::string>& extra = {}) const { return run_pkb(args(extra), 300, env()); }
  std::vector<std::string> log_lines(const std::string& kind) const {
    std::vector<std::string> found;
    std::istringstream in(slurp(log));
    for (std::string l; std::getline(in, l);)
      if (l.rfind(kind + " ", 0) == 0) found.push_back(l);
    return found;
  }
};

// The seed of a stand-in's "eval PROBLEM SEED PATH" log line.
std::string seed_in(const std::string& log_line) {
  std::istringstream in(log_line);
  std::string kind, problem, seed;
  in >> kind >> problem >> seed;
  return seed;
}

std::string where(const json& line) {
  return line["problem"].get<std::string>() + "/" + std::to_string(line["sweep"]["sample"].get<int>());
}

}  // namespace

TEST(Sweep, EveryWayAnEvaluationEndsGetsExactlyOneLine) {
  FakeSweep s("sweep-verdicts");
  s.candidate("coll_allreduce", 0, "correct 2.0");
  s.candidate("coll_allreduce", 1, "wrong");
  s.candidate("coll_allreduce", 2, "segv");
  s.candidate("coll_allreduce", 3, "internal");
  s.candidate("coll_allreduce", 4, "hang");
  s.candidate("coll_gather", 0, "correct 0.5");
  PkbRun r = s.run({"--eval-deadline", "3"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_LT(r.seconds, 30) << "the hung evaluation should cost only its 3 s deadline";

  std::vector<json> lines = read_lines(s.out);
  ASSERT_EQ(lines.size(), 6u) << slurp(s.out);
  EXPECT_EQ(task_keys(lines).size(), 6u);
  std::map<std::string, json> by;
  for (auto& l : lines) by[where(l)] = l;
  EXPECT_EQ(by["coll_allreduce/0"]["verdict"], "correct");
  EXPECT_EQ(by["coll_allreduce/0"]["speedup"], 2.0);
  EXPECT_EQ(by["coll_allreduce/1"]["verdict"], "wrong");
  EXPECT_EQ(by["coll_allreduce/2"]["verdict"], "crash");
  EXPECT_EQ(by["coll_allreduce/2"]["message"], "pkb eval was killed by signal 11 (Segmentation fault)");
  EXPECT_EQ(by["coll_allreduce/3"]["verdict"], "crash");
  EXPECT_EQ(by["coll_allreduce/3"]["message"],
            "pkb eval failed (exit code 7) without writing its result: pkb: internal error: boom");
  EXPECT_EQ(by["coll_allreduce/4"]["verdict"], "timeout");
  EXPECT_EQ(by["coll_allreduce/4"]["message"], "pkb eval overran the sweep's deadline of 3 s and was killed");
  for (auto* k : {"coll_allreduce/2", "coll_allreduce/3", "coll_allreduce/4"}) {
    EXPECT_EQ(by[k]["flags"], json::array({"no_result"})) << k;
    EXPECT_EQ(by[k]["schema"], "pkb.eval/1") << k;
    EXPECT_EQ(by[k]["category"], "coll") << k;
  }
  EXPECT_EQ(by["coll_gather/0"]["verdict"], "correct");
  EXPECT_EQ(by["coll_allreduce/1"]["sweep"]["run"], "fake");
  EXPECT_EQ(by["coll_allreduce/1"]["candidate"]["path"],
            (s.solutions / "fake/coll_allreduce/sample_1.cpp").string());

  // Registry order (allreduce is problem 1, gather 6), each candidate compiled once, and no
  // seed given: every evaluation draws its own inputs.
  EXPECT_EQ(lines.front()["problem"], "coll_allreduce");
  EXPECT_EQ(lines.back()["problem"], "coll_gather");
  for (auto& l : s.log_lines("eval")) EXPECT_EQ(seed_in(l), "fresh") << l;
  std::set<std::string> seeds;
  for (auto& l : lines)
    if (!l["run"]["seed"].is_null()) seeds.insert(l["run"]["seed"].get<std::string>());
  EXPECT_EQ(seeds.size(), 3u) << "the three evaluations that wrote their own result each drew a seed";
  EXPECT_EQ(s.log_lines("build").size(), 6u);
  EXPECT_EQ(s.log_lines("eval").size(), 6u);
  EXPECT_TRUE(contains(r.out, "[6/6] coll_gather W=4 fake/sample_0: correct 0.50x")) << r.out;
  EXPECT_TRUE(contains(r.out, "done: 6 evaluations")) << r.out;
}

TEST(Sweep, ReRunResumesAndRepairsATornLastLine) {
  FakeSweep s("sweep-resume");
  for (int k = 0; k < 3; ++k) s.candidate("coll_allreduce", k, "correct 1.5");
  ASSERT_EQ(s.run().code, 0);
  std::string first = slurp(s.out);
  ASSERT_EQ(count_lines(s.out), 3u);

  PkbRun again = s.run();
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_TRUE(contains(again.out, "3 evaluations (3 already in")) << again.out;
  EXPECT_EQ(slurp(s.out), first) << "a finished sweep run again changes nothing";
  EXPECT_EQ(s.log_lines("eval").size(), 3u);

  // A kill in the middle of writing the third line leaves half of it.
  size_t third = first.rfind('\n', first.size() - 2) + 1;
  std::string torn = first.substr(0, third + (first.size() - third) / 2);
  write_file(s.out, torn);
  PkbRun repaired = s.run();
  EXPECT_EQ(repaired.code, 0) << repaired.err;
  EXPECT_TRUE(contains(repaired.out + repaired.err, "cut off a torn last line")) << repaired.out << repaired.err;
  std::string now = slurp(s.out);
  EXPECT_EQ(now.substr(0, third), first.substr(0, third)) << "lines before the torn one are kept as they were";
  std::vector<json> lines = read_lines(s.out);
  ASSERT_EQ(lines.size(), 3u) << now;
  EXPECT_EQ(task_keys(lines).size(), 3u);
  auto evals = s.log_lines("eval");
  ASSERT_EQ(evals.size(), 4u) << "only the torn evaluation runs again";
  EXPECT_EQ(seed_in(evals[3]), "fresh") << "a resumed evaluation draws its own inputs too";
}

TEST(Sweep, KilledMidwayLosesNothingLeavesNoProcessAndResumes) {
  FakeSweep s("sweep-kill");
  for (int k = 0; k < 8; ++k) s.candidate("coll_allreduce", k, "slow 1.0");
  Background bg = start_pkb(s.args(), (s.dir / "first.log").string(), s.env());
  ASSERT_TRUE(wait_for_lines(s.out, 2, 60)) << slurp(s.dir / "first.log");

  PkbRun second = s.run();
  EXPECT_EQ(second.code, 2);
  EXPECT_TRUE(contains(second.err, "is being written by another pkb sweep")) << second.err;

  kill(bg.pid, SIGKILL);
  reap(bg.pid);
  auto left = survivors(bg.tag, 5);
  EXPECT_TRUE(left.empty()) << "the killed sweep left " << left.size() << " process(es), first pid " << left[0];
  std::string before = slurp(s.out);
  size_t kept = count_lines(s.out);
  ASSERT_GE(kept, 2u);
  ASSERT_LT(kept, 8u) << "the sweep finished before it could be killed";

  PkbRun rest = s.run();
  ASSERT_EQ(rest.code, 0) << rest.err;
  std::string after = slurp(s.out);
  EXPECT_EQ(after.substr(0, before.rfind('\n') + 1), before.substr(0, before.rfind('\n') + 1));
  std::vector<json> lines = read_lines(s.out);
  EXPECT_EQ(lines.size(), 8u) << after;
  EXPECT_EQ(task_keys(lines).size(), 8u) << "no evaluation twice, none lost";
}

TEST(Sweep, ARefusedCommandLineStopsTheSweepAndRecordsNothing) {
  FakeSweep s("sweep-usage");
  s.candidate("coll_allreduce", 0, "usage");
  s.candidate("coll_allreduce", 1, "correct 1.0");
  PkbRun r = s.run();
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: pkb eval refused")) << r.err;
  EXPECT_TRUE(contains(r.err, "--size huge is not a preset of this problem")) << r.err;
  EXPECT_EQ(count_lines(s.out), 0u);
}

TEST(Sweep, BadInputGetsOneErrorLine) {
  FakeSweep s("sweep-bad");
  s.candidate("coll_allreduce", 0, "correct 1.0");
  auto expect_error = [&](std::vector<std::string> args, const std::string& says) {
    PkbRun r = run_pkb(args, 60, s.env());
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "pkb: error: " + says)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  expect_error({"sweep", "--solutions", "/nonexistent", "--out", s.out.string()},
               "--solutions /nonexistent: no such file or folder");
  expect_error(s.args({"--problems", "coll_allreduc"}), "--problems: unknown problem 'coll_allreduc'; did you mean coll_allreduce");
  expect_error({"sweep", "--solutions", s.solutions.string(), "--device", "cpu", "--out", s.dir.string()},
               "--out " + s.dir.string() + " is a folder");
  expect_error(s.args({"--shard", "3/2"}), "--shard takes INDEX/COUNT");
  expect_error(s.args({"--submit"}), "--nodes, --sbatch, --submit and --wait are for --launcher slurm");
  fs::create_directories(s.dir / "empty");
  expect_error({"sweep", "--solutions", (s.dir / "empty").string(), "--device", "cpu", "--out", s.out.string()},
               "no candidate to evaluate under");
}

TEST(Sweep, SlurmScriptSharesRunHereCoverTheGridOnce) {
  FakeSweep s("sweep-shards");
  s.candidate("coll_allreduce", 0, "correct 1.0");
  s.candidate("coll_allreduce", 1, "wrong");
  s.candidate("coll_gather", 0, "correct 3.0");
  s.candidate("coll_scatter", 0, "correct 1.0");
  s.candidate("coll_scatter", 1, "correct 1.0");
  fs::path results = s.dir / "results";
  PkbRun w = run_pkb({"sweep", "--launcher", "slurm", "--nodes", "3", "--solutions", s.solutions.string(), "--problems",
                      "coll", "--device", "cpu", "-w", "4", "--sbatch=--time=10", "--out", results.string()},
                     60, s.env());
  ASSERT_EQ(w.code, 0) << w.err;
  std::string script = slurp(results / "sweep.sbatch");
  EXPECT_TRUE(contains(script, "#SBATCH --array=0-2\n")) << script;
  EXPECT_TRUE(contains(script, "#SBATCH --time=10\n")) << script;
  EXPECT_FALSE(contains(script, "'--seed'")) << "every evaluation draws its own inputs:\n" << script;
  // What each array task would run, run here one after another.
  for (int task = 0; task < 3; ++task) {
    auto r = pkb::launch::run_process({"bash", (results / "sweep.sbatch").string()}, 120,
                                      {{"SLURM_ARRAY_TASK_ID", std::to_string(task)}, s.env()[0], s.env()[1]});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  for (int task = 0; task < 3; ++task) EXPECT_TRUE(fs::exists(results / ("task_" + std::to_string(task) + ".jsonl")));
  for (auto& l : s.log_lines("eval")) EXPECT_EQ(seed_in(l), "fresh") << l;

  PkbRun rep = run_pkb({"report", results.string(), "--json", (s.dir / "r.json").string()});
  ASSERT_EQ(rep.code, 0) << rep.err;
  json j = json::parse(slurp(s.dir / "r.json"));
  EXPECT_EQ(j["evaluations"], 5);
  EXPECT_EQ(j["duplicates"], 0);
  EXPECT_EQ(j["files"].size(), 3u);
}

namespace {

// An evaluation's span and GPUs, from the stand-in's "ran PATH START END GPUS" log lines.
struct Ran {
  std::string path, gpus;
  double start = 0, end = 0;
};

std::map<std::string, Ran> ran_by_sample(const FakeSweep& s) {
  std::map<std::string, Ran> out;
  for (auto& l : s.log_lines("ran")) {
    std::istringstream in(l);
    std::string kind;
    Ran r;
    in >> kind >> r.path >> r.start >> r.end >> r.gpus;
    fs::path p(r.path);
    out[p.parent_path().filename().string() + "/" + p.stem().string()] = r;
  }
  return out;
}

bool overlap(const Ran& a, const Ran& b) { return a.start < b.end && b.start < a.end; }

// The most evaluations running at one moment.
size_t most_at_once(const std::map<std::string, Ran>& ran) {
  size_t most = 0;
  for (auto& [k, a] : ran) {
    size_t n = 0;
    for (auto& [j, b] : ran) n += b.start <= a.start && a.start < b.end;
    most = std::max(most, n);
  }
  return most;
}

}  // namespace

// --parallel 2 on the CPU device: two evaluations at a time, never three; every line whole
// and recording that its timing shared the machine.
TEST(Sweep, ParallelRunsEvaluationsSideBySide) {
  FakeSweep s("sweep-parallel");
  for (auto* p : {"coll_allreduce", "coll_allgather", "coll_broadcast", "coll_reduce"}) s.candidate(p, 0, "slow 1.0");
  PkbRun r = s.run({"--parallel", "2"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, ", up to 2 at once")) << r.out;
  auto ran = ran_by_sample(s);
  ASSERT_EQ(ran.size(), 4u) << slurp(s.log);
  EXPECT_EQ(most_at_once(ran), 2u) << slurp(s.log);
  std::vector<json> lines = read_lines(s.out);
  ASSERT_EQ(lines.size(), 4u) << slurp(s.out);
  EXPECT_EQ(task_keys(lines).size(), 4u);
  for (auto& l : lines) EXPECT_EQ(l["sweep"]["parallel"], 2) << l.dump();
  EXPECT_FALSE(contains(r.err, "\r")) << "stderr is no terminal: no progress line";
}

// Four evaluations of one problem, --parallel 4: each times the reference beside its own
// candidate, so none waits for another, whatever the first one's verdict.
TEST(Sweep, AProblemsEvaluationsRunSideBySide) {
  FakeSweep s("sweep-side-by-side");
  s.candidate("coll_allreduce", 0, "wrong");
  for (int k = 1; k <= 3; ++k) s.candidate("coll_allreduce", k, "slow 1.0");
  PkbRun r = s.run({"--parallel", "4"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto ran = ran_by_sample(s);
  ASSERT_EQ(ran.size(), 4u) << slurp(s.log);
  for (int k = 2; k <= 3; ++k)
    EXPECT_TRUE(overlap(ran["coll_allreduce/sample_1"], ran["coll_allreduce/sample_" + std::to_string(k)]))
        << "sample " << k << "\n" << slurp(s.log);
}

// Packed onto GPUs (the runner itself, told the node has four): each child's
// CUDA_VISIBLE_DEVICES names as many of the node's GPUs as its W, never one another holds.
TEST(SweepRunner, PackedOnGpusEachChildSeesOnlyItsOwn) {
  FakeSweep s("sweep-gpus");
  std::vector<pkb::sweep::Task> tasks;
  int i = 0;
  for (auto [problem, world] : std::vector<std::pair<std::string, int>>{
           {"coll_allreduce", 2}, {"coll_allgather", 1}, {"coll_broadcast", 1}, {"coll_reduce", 2}, {"coll_gather", 1}}) {
    s.candidate(problem, 0, "slow 0.6");
    pkb::sweep::Task t;
    t.candidate.path = (s.solutions / "fake" / problem / "sample_0.cpp").string();
    t.candidate.problem = problem;
    t.candidate.run = "fake";
    t.candidate.device = "cuda";
    t.candidate.sha256 = "sha" + std::to_string(i);
    t.world = world;
    t.key = "key" + std::to_string(i++);
    tasks.push_back(t);
  }
  pkb::sweep::ResultsFile out(s.out.string());
  pkb::sweep::RunnerOptions o;
  o.pkb = s.fake.string();
  o.scratch_dir = (s.dir / "scratch").string();
  o.parallel = 4;
  o.gpus = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
  setenv("FAKE_LOG", s.log.c_str(), 1);
  EXPECT_EQ(pkb::sweep::run_sweep(tasks, out, o, {}), 5u);
  unsetenv("FAKE_LOG");
  auto ran = ran_by_sample(s);
  ASSERT_EQ(ran.size(), 5u) << slurp(s.log);
  std::map<std::string, int> world = {{"coll_allreduce", 2}, {"coll_allgather", 1}, {"coll_broadcast", 1},
                                      {"coll_reduce", 2}, {"coll_gather", 1}};
  auto gpus_of = [](const Ran& r) {
    std::set<std::string> g;
    std::istringstream in(r.gpus);
    for (std::string x; std::getline(in, x, ',');) g.insert(x);
    return g;
  };
  for (auto& [name, r] : ran) {
    std::string problem = name.substr(0, name.find('/'));
    EXPECT_EQ(gpus_of(r).size(), static_cast<size_t>(world[problem])) << name << ": " << r.gpus;
    for (auto& g : gpus_of(r)) EXPECT_TRUE(g.rfind("GPU-", 0) == 0) << g;
    for (auto& [other, q] : ran) {
      if (other == name || !overlap(r, q)) continue;
      for (auto& g : gpus_of(r)) EXPECT_EQ(gpus_of(q).count(g), 0u) << name << " and " << other << " share " << g;
    }
  }
  // Largest W first: the two W=2 evaluations split the node at once.
  EXPECT_TRUE(overlap(ran["coll_allreduce/sample_0"], ran["coll_reduce/sample_0"])) << slurp(s.log);
  EXPECT_LE(ran["coll_allreduce/sample_0"].start, ran["coll_allgather/sample_0"].start) << slurp(s.log);
}

// On a terminal, one line on stderr refreshed in place: done of total, failures so far, the
// time left. pkb sweep runs with its stderr on a pseudo-terminal here.
TEST(Sweep, ProgressLineOnATerminal) {
  FakeSweep s("sweep-tty");
  s.candidate("coll_allreduce", 0, "wrong");
  for (int k = 1; k <= 2; ++k) s.candidate("coll_allreduce", k, "slow 0.5");
  TerminalRun r = run_pkb_on_terminal(s.args(), (s.dir / "stdout").string(), s.env());
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.err;
  const std::string& err = r.err;
  EXPECT_TRUE(contains(err, "\r\033[K[")) << "redrawn in place: " << err;
  EXPECT_TRUE(contains(err, "] 1/3 | 1 failed | ~")) << err;
  EXPECT_TRUE(contains(err, " left")) << err;
  EXPECT_TRUE(contains(err, "coll_allreduce W=4 fake/sample_")) << "what runs now: " << err;
  EXPECT_TRUE(contains(slurp(s.dir / "stdout"), "[3/3] coll_allreduce W=4 fake/sample_2: correct")) << slurp(s.dir / "stdout");
}
