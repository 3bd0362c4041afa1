// pkb sweep with the real pkb eval on the CPU device, over the collective problems: the
// correct CPU candidates (solutions_cpu/coll_*.cpp) and a wrong, a crashing and a hanging
// one (tests/sweep/candidates), laid out as pkb generate writes them. Then the same sweep
// killed mid-way and run again; and two nights compared (pkb report --against).
#include <gtest/gtest.h>

#include <map>

#include "sweep_support.hpp"

using namespace pkbtest;
using namespace sweeptest;

namespace {

const char* const kCollectives[] = {"coll_allreduce", "coll_allgather", "coll_broadcast", "coll_reduce",
                                    "coll_scatter",   "coll_gather",    "coll_reducescatter", "coll_alltoall"};

// solutions_cpu/<run>/<problem>/sample_0.cpp: the correct candidate of every collective.
fs::path correct_tree(const fs::path& dir, const std::string& run) {
  fs::path root = dir / "solutions_cpu";
  for (auto* p : kCollectives)
    write_file(root / run / p / "sample_0.cpp", slurp(std::string(PKB_SOURCE_DIR) + "/solutions_cpu/" + p + ".cpp"));
  return root;
}

std::vector<std::string> sweep_args(const fs::path& solutions, const fs::path& out) {
  // Few trials and iterations on small inputs (M = N = 256), and a short phase deadline: the
  // hang costs only that.
  return {"sweep", "--solutions", solutions.string(), "--problems", "coll", "--device", "cpu", "-w", "4",
          "--size", pkbtest::kSmallCollectives, "--trials", "2", "--warmup", "1", "--iters", "3", "--baseline-iters", "20",
          "--timeout", "20", "--out", out.string()};
}

}  // namespace

TEST(SweepEval, CollectivesWithCorrectWrongCrashingAndHangingCandidates) {
  fs::path dir = temp_dir("sweep-eval");
  fs::path solutions = correct_tree(dir, "mixed");
  const std::string bad = std::string(PKB_SOURCE_DIR) + "/tests/sweep/candidates/";
  write_file(solutions / "mixed/coll_allreduce/sample_1.cpp", slurp(bad + "zeros.cpp"));
  write_file(solutions / "mixed/coll_allreduce/sample_2.cpp", slurp(bad + "segfault.cpp"));
  write_file(solutions / "mixed/coll_allreduce/sample_3.cpp", slurp(bad + "deadlock.cpp"));
  write_file(solutions / "mixed/coll_broadcast/sample_1.cpp", "this is not C++\n");
  fs::path out = dir / "results.jsonl";
  PkbRun r = run_pkb(sweep_args(solutions, out), 900, {{"PKB_CACHE_DIR", (dir / "cache").string()}});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(survivors(r.tag).empty());

  std::vector<json> lines = read_lines(out);
  ASSERT_EQ(lines.size(), 12u) << slurp(out);
  EXPECT_EQ(task_keys(lines).size(), 12u);
  std::map<std::string, json> by;
  for (auto& l : lines) by[l["problem"].get<std::string>() + "/" + std::to_string(l["sweep"]["sample"].get<int>())] = l;
  for (auto* p : kCollectives) {
    const json& l = by[std::string(p) + "/0"];
    EXPECT_EQ(l["verdict"], "correct") << p << ": " << l.dump();
    EXPECT_TRUE(l["speedup"].is_number()) << l.dump();
    EXPECT_EQ(l["schema"], "pkb.eval/1");
    EXPECT_EQ(l["sweep"]["run"], "mixed");
    EXPECT_FALSE(contains(l.dump(), "no_result")) << "pkb eval wrote this result itself";
  }
  EXPECT_EQ(by["coll_allreduce/1"]["verdict"], "wrong") << by["coll_allreduce/1"].dump();
  EXPECT_EQ(by["coll_allreduce/2"]["verdict"], "crash") << by["coll_allreduce/2"].dump();
  EXPECT_EQ(by["coll_allreduce/3"]["verdict"], "timeout") << by["coll_allreduce/3"].dump();
  EXPECT_LT(by["coll_allreduce/3"]["wall_s"].get<double>(), 20 + 40) << "a hang costs its own timeout, not more";
  EXPECT_EQ(by["coll_broadcast/1"]["verdict"], "compile_error") << by["coll_broadcast/1"].dump();

  // Every evaluation drew its own inputs, and timed the reference beside its own candidate.
  std::set<std::string> seeds;
  size_t with_seed = 0;
  for (auto& l : lines) {
    if (l["run"]["seed"].is_string()) {
      seeds.insert(l["run"]["seed"].get<std::string>());
      ++with_seed;
    }
    if (l["verdict"] == "correct") EXPECT_GT(l["timing"]["baseline"]["samples"].get<int>(), 0) << l.dump();
  }
  EXPECT_EQ(seeds.size(), with_seed);

  PkbRun rep = run_pkb({"report", out.string(), "--json", (dir / "r.json").string()});
  ASSERT_EQ(rep.code, 0) << rep.err;
  json j = json::parse(slurp(dir / "r.json"));
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_EQ(j["runs"][0]["counts"]["correct"], 8);
  EXPECT_EQ(j["runs"][0]["counts"]["compiled"], 11);
}

TEST(SweepEval, KilledMidwayAndRunAgainCompletesWithNoDuplicateAndNoLoss) {
  fs::path dir = temp_dir("sweep-eval-kill");
  fs::path solutions = correct_tree(dir, "resumed");
  fs::path out = dir / "results.jsonl";
  Background bg = start_pkb(sweep_args(solutions, out), (dir / "first.log").string());
  ASSERT_TRUE(wait_for_lines(out, 3, 600)) << slurp(dir / "first.log");
  kill(bg.pid, SIGKILL);  // the sweep alone: its evaluation and that one's ranks must follow it
  reap(bg.pid);
  auto left = survivors(bg.tag, 10);
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) outlived the killed sweep, first pid " << left[0];
  std::string before = slurp(out);
  before = before.substr(0, before.rfind('\n') + 1);
  size_t kept = count_lines(out);
  ASSERT_LT(kept, 8u) << "the sweep finished before it could be killed";
  EXPECT_TRUE(fs::is_directory(out.string() + ".scratch")) << "the killed sweep's scratch sits beside its results";

  PkbRun rest = run_pkb(sweep_args(solutions, out), 900);
  ASSERT_EQ(rest.code, 0) << rest.out << rest.err;
  EXPECT_TRUE(contains(rest.out, "8 evaluations (" + std::to_string(kept) + " already in")) << rest.out;
  std::string after = slurp(out);
  EXPECT_EQ(after.substr(0, before.size()), before) << "what was written before the kill is kept as it was";
  std::vector<json> lines = read_lines(out);
  EXPECT_EQ(lines.size(), 8u) << after;
  std::set<std::string> problems;
  for (auto& l : lines) {
    problems.insert(l["problem"].get<std::string>());
    EXPECT_EQ(l["verdict"], "correct") << l.dump();
  }
  EXPECT_EQ(problems.size(), 8u) << "one line per evaluation, none twice, none lost";
  EXPECT_EQ(task_keys(lines).size(), 8u);
  EXPECT_FALSE(fs::exists(out.string() + ".scratch")) << "the sweep run again cleared the killed one's scratch";
}

// Two nights on the CPU device compared as a nightly CI job does it (docs/sweep.md): night 1
// sweeps two correct candidates; one is then replaced by a wrong one (same path, another
// source), and night 2 sweeps them side by side (--parallel 2: two problems, two groups).
// pkb report --against finds the pair that broke (matched by its path) and fails on it; the
// unchanged candidate's CPU timings are compared for its verdict only.
TEST(SweepEval, TwoNightsComparedAndARegressionFailsTheJob) {
  fs::path dir = temp_dir("sweep-nightly");
  fs::path solutions = dir / "solutions_cpu";
  const std::string cpu = std::string(PKB_SOURCE_DIR) + "/solutions_cpu/";
  write_file(solutions / "nightly/coll_allreduce/sample_0.cpp", slurp(cpu + "coll_allreduce.cpp"));
  write_file(solutions / "nightly/coll_allgather/sample_0.cpp", slurp(cpu + "coll_allgather.cpp"));
  auto night = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"sweep", "--solutions", solutions.string(), "--problems", "coll_allreduce,coll_allgather",
                                     "--device", "cpu", "-w", "2", "--trials", "3", "--warmup", "1", "--iters", "3",
                                     "--out", (dir / out).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    PkbRun r = run_pkb(args, 300, {{"PKB_CACHE_DIR", (dir / "cache").string()}});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
  };
  night("night1.jsonl", {});
  write_file(solutions / "nightly/coll_allgather/sample_0.cpp",
             slurp(std::string(PKB_SOURCE_DIR) + "/tests/sweep/candidates/zeros.cpp"));
  night("night2.jsonl", {"--parallel", "2"});
  for (auto& l : read_lines(dir / "night2.jsonl")) EXPECT_EQ(l["sweep"]["parallel"], 2) << l.dump();

  fs::path c = dir / "compare.json";
  PkbRun r = run_pkb({"report", "--against", (dir / "night1.jsonl").string(), (dir / "night2.jsonl").string(), "--json",
                      c.string(), "--fail-on-regression"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "pkb: 1 regression against the earlier results")) << r.err;
  json j = json::parse(slurp(c));
  EXPECT_EQ(j["counts"]["pairs"], 2) << j.dump(2);
  EXPECT_EQ(j["regressions"], 1);
  ASSERT_EQ(j["pairs"].size(), 2u);
  const json& broke = j["pairs"][0];
  EXPECT_EQ(broke["change"], "broke");
  EXPECT_EQ(broke["problem"], "coll_allgather");
  EXPECT_EQ(broke["matched_by"], "path") << "the source changed under the same path";
  EXPECT_EQ(broke["then"]["verdict"], "correct");
  EXPECT_EQ(broke["now"]["verdict"], "wrong");
  const json& same = j["pairs"][1];
  EXPECT_EQ(same["problem"], "coll_allreduce");
  EXPECT_EQ(same["matched_by"], "sha256");
  EXPECT_EQ(same["change"], "not_counting") << "CPU-device speed never counts: " << same.dump();
  EXPECT_EQ(same["now"]["timing_note"], "CPU device");
  EXPECT_TRUE(same["now"]["speedup"].is_number());
  std::string warnings = j["warnings"].dump();
  EXPECT_TRUE(contains(warnings, "then and now differ in pkb sweep --parallel (then 1; now 2)")) << warnings;

  r = run_pkb({"report", "--against", (dir / "night1.jsonl").string(), (dir / "night1.jsonl").string(),
               "--fail-on-regression"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}
