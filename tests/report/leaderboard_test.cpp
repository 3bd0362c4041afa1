// The report's estimators and aggregates against numbers worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "report/leaderboard.hpp"

using namespace pkb::report;

TEST(PassAtK, MatchesTheClosedFormWorkedByHand) {
  EXPECT_DOUBLE_EQ(pass_at_k(5, 2, 1), 0.4);                  // c/n
  EXPECT_DOUBLE_EQ(pass_at_k(5, 2, 2), 1.0 - 3.0 / 10.0);     // 1 - C(3,2)/C(5,2)
  EXPECT_DOUBLE_EQ(pass_at_k(5, 2, 3), 1.0 - 1.0 / 10.0);     // 1 - C(3,3)/C(5,3)
  EXPECT_DOUBLE_EQ(pass_at_k(5, 2, 4), 1.0);                  // fewer than 4 failures: a pass is certain
  EXPECT_DOUBLE_EQ(pass_at_k(10, 0, 5), 0.0);
  EXPECT_DOUBLE_EQ(pass_at_k(10, 10, 1), 1.0);
  // 1 - C(197,100)/C(200,100) = 1 - (100*99*98)/(200*199*198): large n stays exact.
  EXPECT_NEAR(pass_at_k(200, 3, 100), 1.0 - (100.0 * 99 * 98) / (200.0 * 199 * 198), 1e-12);
}

namespace {

Evaluation eval(const std::string& run, const std::string& problem, int world, const std::string& verdict,
                std::optional<double> speedup = std::nullopt, std::optional<double> roofline = std::nullopt) {
  Evaluation e;
  e.run = run;
  e.problem = problem;
  e.category = problem.substr(0, problem.find('_'));
  e.problem_id = problem == "coll_allreduce" ? 1 : problem == "coll_allgather" ? 2 : 9;
  e.world = world;
  e.verdict = verdict;
  e.speedup = speedup;
  e.roofline_fraction = roofline;
  // A CUDA result with a GPU per rank unless a test says otherwise: its timing counts.
  e.device = "cuda";
  e.timing_counts = verdict == "correct" && speedup.has_value();
  return e;
}

}  // namespace

TEST(Summary, RatesOfOneRun) {
  std::vector<Evaluation> evals = {
      eval("m", "coll_allreduce", 4, "correct", 4.0, 0.5), eval("m", "coll_allreduce", 4, "correct", 1.0, 0.1),
      eval("m", "coll_allreduce", 4, "compile_error"),     eval("m", "coll_allreduce", 4, "correct"),  // untimed
  };
  Summary s = summarize(evals, {1, 2});
  ASSERT_EQ(s.runs.size(), 1u);
  const Rates& r = s.runs[0].rates;
  EXPECT_EQ(r.evaluations, 4);
  EXPECT_EQ(r.compiled, 3);
  EXPECT_EQ(r.correct, 3);
  EXPECT_EQ(r.timed, 2);
  EXPECT_EQ(r.fast, (std::vector<int>{1, 1, 1}));  // 1.0 is not faster than the reference; 4.0 beats 1, 1.5 and 2
  EXPECT_DOUBLE_EQ(*r.geomean_speedup, 2.0);       // sqrt(4 * 1); the untimed one has no speedup to count
  EXPECT_DOUBLE_EQ(*r.mean_roofline_fraction, 0.3);
  // One problem, n = 4, c = 3: pass@1 = 3/4, pass@2 = 1 - C(1,2)/C(4,2) = 1.
  EXPECT_DOUBLE_EQ(*s.runs[0].pass_at_k.at(1), 0.75);
  EXPECT_DOUBLE_EQ(*s.runs[0].pass_at_k.at(2), 1.0);
  // fast_1: c = 1 of n = 4: @1 = 1/4, @2 = 1 - C(3,2)/C(4,2) = 1 - 3/6.
  EXPECT_DOUBLE_EQ(*s.runs[0].fast_at_k.at(1)[0], 0.25);
  EXPECT_DOUBLE_EQ(*s.runs[0].fast_at_k.at(2)[0], 0.5);
}

TEST(Summary, WorldSizesAreSeparateProblemsAndKBeyondTheSamplesIsUndefined) {
  std::vector<Evaluation> evals = {eval("m", "coll_allreduce", 2, "correct", 2.0), eval("m", "coll_allreduce", 2, "wrong"),
                                   eval("m", "coll_allreduce", 4, "wrong")};
  Summary s = summarize(evals, {1, 2});
  EXPECT_EQ(s.runs[0].problems, 2);
  EXPECT_EQ(s.runs[0].min_samples, 1);
  EXPECT_DOUBLE_EQ(*s.runs[0].pass_at_k.at(1), (0.5 + 0.0) / 2);
  EXPECT_FALSE(s.runs[0].pass_at_k.at(2).has_value());  // W=4 has one sample
  ASSERT_EQ(s.best.size(), 2u);
  EXPECT_EQ(s.best[0].world, 2);
  ASSERT_TRUE(s.best[0].best.has_value());
  EXPECT_DOUBLE_EQ(*s.best[0].best->speedup, 2.0);
  EXPECT_FALSE(s.best[1].best.has_value());
  EXPECT_EQ(s.best[1].evaluated, 1);
}

TEST(Summary, CategoriesFollowProblemIdsThenRuns) {
  std::vector<Evaluation> evals = {eval("b", "dp_layernorm_bwd_allreduce", 4, "correct", 1.0),
                                   eval("b", "coll_allgather", 4, "wrong"), eval("a", "coll_allreduce", 4, "correct", 1.0)};
  Summary s = summarize(evals, {1});
  ASSERT_EQ(s.categories.size(), 3u);
  EXPECT_EQ(s.categories[0].category + "/" + s.categories[0].run, "coll/a");
  EXPECT_EQ(s.categories[1].category + "/" + s.categories[1].run, "coll/b");
  EXPECT_EQ(s.categories[2].category + "/" + s.categories[2].run, "dp/b");
}

// A correct run whose timing says nothing about speed (in doubt, the CPU device, ranks
// sharing a GPU) counts as correct, never as fast, and is never the best candidate.
TEST(Summary, TimingThatDoesNotCountIsNeverFast) {
  Evaluation doubtful = eval("m", "coll_allreduce", 4, "correct", 50.0);
  doubtful.timing_in_doubt = true;
  doubtful.timing_counts = false;
  Evaluation cpu = eval("m", "coll_allreduce", 4, "correct", 9.0, 0.9);
  cpu.device = "cpu";
  cpu.timing_counts = false;
  std::vector<Evaluation> evals = {doubtful, cpu, eval("m", "coll_allreduce", 4, "correct", 1.2, 0.2)};
  Summary s = summarize(evals, {1, 3});
  const Rates& r = s.runs[0].rates;
  EXPECT_EQ(r.correct, 3);
  EXPECT_EQ(r.timed, 1);
  EXPECT_EQ(r.not_meaningful, 2);
  EXPECT_EQ(r.fast[0], 1);  // only the 1.2x one
  EXPECT_EQ(r.fast[1], 0);
  EXPECT_DOUBLE_EQ(*r.geomean_speedup, 1.2);
  EXPECT_DOUBLE_EQ(*r.mean_roofline_fraction, 0.2) << "the CPU one's roofline does not count either";
  // fast_1@k over n = 3 samples with c = 1: @1 = 1/3, @3 = 1.
  EXPECT_DOUBLE_EQ(*s.runs[0].fast_at_k.at(1)[0], 1.0 / 3);
  EXPECT_DOUBLE_EQ(*s.runs[0].fast_at_k.at(1)[2], 0.0) << "nothing counted is more than 2x";
  ASSERT_EQ(s.best.size(), 1u);
  EXPECT_DOUBLE_EQ(*s.best[0].best->speedup, 1.2);
}

namespace {

Evaluation turn(int sample, int t, const std::string& verdict, std::optional<double> speedup = std::nullopt) {
  Evaluation e = eval("agent", "coll_allreduce", 2, verdict, speedup);
  e.sample = sample;
  e.turn = t;
  e.sha256 = "sample" + std::to_string(sample) + "turn" + std::to_string(t);  // every turn a file of its own
  return e;
}

}  // namespace

// pkb agent: sample 0 is correct from turn 3 (1.2x, then 1.8x at turn 4); sample 1 never;
// sample 2 correct at turn 1, stops there. A sample counts once, by its best turn.
TEST(Summary, AgentTurnsCountOncePerSampleAndConvergeByTurn) {
  std::vector<Evaluation> evals = {
      turn(0, 1, "compile_error"), turn(0, 2, "wrong"),      turn(0, 3, "correct", 1.2), turn(0, 4, "correct", 1.8),
      turn(1, 1, "compile_error"), turn(1, 4, "timeout"),    turn(2, 1, "correct", 0.5),
  };
  Summary s = summarize(evals, {1, 2});
  EXPECT_EQ(s.evaluations, 7u);
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.runs[0].rates.evaluations, 3) << "one per sample";
  EXPECT_EQ(s.runs[0].rates.correct, 2);
  EXPECT_EQ(s.runs[0].min_samples, 3);
  EXPECT_DOUBLE_EQ(*s.runs[0].pass_at_k.at(1), 2.0 / 3);
  ASSERT_EQ(s.best.size(), 1u);
  EXPECT_EQ(s.best[0].best->turn, 4) << "the fastest turn stands for sample 0";
  EXPECT_EQ(s.best[0].correct, 2);

  ASSERT_EQ(s.turns.size(), 4u);  // turns 1..4 of the one run
  std::vector<double> pass1, fast1, fast15;
  for (auto& r : s.turns) {
    EXPECT_EQ(r.run, "agent");
    EXPECT_EQ(r.samples, 3);
    pass1.push_back(*r.pass_at_k.at(1));
    fast1.push_back(r.fast[0]);
    fast15.push_back(r.fast[1]);
  }
  auto near = [](const std::vector<double>& got, const std::vector<double>& want) {
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "turn " << i + 1;
  };
  near(pass1, {1.0 / 3, 1.0 / 3, 2.0 / 3, 2.0 / 3});
  near(fast1, {0, 0, 1.0 / 3, 1.0 / 3});  // 0.5x never counts; 1.2x from turn 3
  near(fast15, {0, 0, 0, 1.0 / 3});       // 1.8x at turn 4
  // pass@2 at turn 3: n = 3, c = 2: 1 - C(1,2)/C(3,2) = 1.
  EXPECT_DOUBLE_EQ(*s.turns[2].pass_at_k.at(2), 1.0);

  Summary plain = summarize({eval("m", "coll_allreduce", 4, "correct", 2.0)}, {1});
  EXPECT_TRUE(plain.turns.empty()) << "no by-turn rows without pkb agent lines";
}

// The same file evaluated several times is ranked by the median of its speedups: a lucky
// run of one file does not beat a steadier file.
TEST(Summary, RepeatsRankByTheirMedianNotTheLuckiestRun) {
  auto with_sha = [](Evaluation e, const std::string& sha) {
    e.sha256 = sha;
    return e;
  };
  std::vector<Evaluation> evals = {
      with_sha(eval("a", "coll_allreduce", 4, "correct", 0.5), "lucky"),
      with_sha(eval("a", "coll_allreduce", 4, "correct", 2.6), "lucky"),
      with_sha(eval("a", "coll_allreduce", 4, "correct", 0.6), "lucky"),
      with_sha(eval("b", "coll_allreduce", 4, "correct", 1.3), "steady"),
      with_sha(eval("b", "coll_allreduce", 4, "correct", 1.1), "steady"),
  };
  Summary s = summarize(evals, {1});
  ASSERT_EQ(s.best.size(), 1u);
  const BestCandidate& b = s.best[0];
  ASSERT_TRUE(b.best.has_value());
  EXPECT_EQ(b.best->sha256, "steady");
  EXPECT_DOUBLE_EQ(*b.best->speedup, 1.1) << "the lower median of an even count";
  EXPECT_EQ(b.repeats, 2);
  EXPECT_DOUBLE_EQ(*b.repeat_low, 1.1);
  EXPECT_DOUBLE_EQ(*b.repeat_high, 1.3);
  // The problem x run table still shows each run's fastest evaluation.
  ASSERT_EQ(s.matrix.size(), 1u);
  EXPECT_DOUBLE_EQ(*s.matrix[0].cells.at("a").fastest->speedup, 2.6);
  EXPECT_EQ(s.matrix[0].cells.at("a").correct, 3);
}

TEST(Summary, WarnsWhenResultsMixSeedsDevicesOrSizes) {
  Evaluation a = eval("a", "coll_allreduce", 4, "correct", 1.5), b = a, c = a;
  a.seed = "1";
  b.seed = "2";
  b.run = "b";
  c.seed = "1";
  c.device = "cpu";
  c.timing_counts = false;
  c.timing_note = "CPU device";
  c.size = "large";
  std::vector<std::string> w = summarize({a, b, c}, {1}).warnings;
  std::string all;
  for (auto& x : w) all += x + "\n";
  EXPECT_NE(all.find("the results mix 2 seeds (1, 2)"), std::string::npos) << all;
  EXPECT_NE(all.find("the results mix devices (cpu, cuda)"), std::string::npos) << all;
  EXPECT_NE(all.find("the results mix sizes (default, large)"), std::string::npos) << all;
  EXPECT_NE(all.find("1 correct evaluation with timings that say nothing about speed (CPU device)"), std::string::npos)
      << all;
  EXPECT_TRUE(summarize({a, a}, {1}).warnings.empty()) << "one seed, device and size: nothing to warn about";

  // Problems of different element types are no mix; one problem at two of them is.
  Evaluation bf = a, other = eval("a", "coll_allgather", 4, "correct", 1.2), fp = a;
  bf.dtype = "bf16";
  other.dtype = "fp32";
  fp.dtype = "fp32";
  EXPECT_TRUE(summarize({bf, other}, {1}).warnings.empty());
  all.clear();
  for (auto& x : summarize({bf, other, fp}, {1}).warnings) all += x + "\n";
  EXPECT_NE(all.find("the same problem at different element types: coll_allreduce (bf16, fp32)"), std::string::npos)
      << all;
}

// A collective at W=1 has no one to talk to: the report says so, and counts how many.
TEST(Summary, WarnsOfCollectivesAtOneRank) {
  Evaluation lonely = eval("a", "coll_allreduce", 1, "correct", 4.0), fine = eval("a", "coll_allreduce", 2, "correct", 1.1);
  lonely.collective = fine.collective = true;
  std::string all;
  for (auto& x : summarize({lonely, fine}, {1}).warnings) all += x + "\n";
  EXPECT_NE(all.find("1 evaluation of a collective at W=1 (coll_allreduce)"), std::string::npos) << all;
  EXPECT_TRUE(summarize({fine}, {1}).warnings.empty());
}

// The calls the time budgets let each evaluation make (run.counts): the header says how
// many made fewer than their settings, and the fewest.
TEST(Summary, CountsTheEvaluationsTheTimeBudgetsCut) {
  Evaluation a = eval("a", "coll_allreduce", 2, "correct", 1.5);
  a.trials = 100;
  a.warmup = 500;
  a.iters = 100;
  a.trials_run = 100;
  a.warmup_used = 500;
  a.iters_used = 100;
  Evaluation b = a;
  b.problem = "coll_allgather";
  b.problem_id = 2;
  b.warmup_used = 3;
  b.iters_used = 10;
  Summary s = summarize({a, b}, {1});
  EXPECT_EQ(s.header.cut_by_budgets, 1);
  EXPECT_EQ(s.header.fewest_trials, 100);
  EXPECT_EQ(s.header.fewest_warmup, 3);
  EXPECT_EQ(s.header.fewest_iters, 10);
}
