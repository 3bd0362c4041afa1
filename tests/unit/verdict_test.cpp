// The verdict rules on reports made up for the purpose: no ranks are started.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>

#include "eval/stats.hpp"
#include "eval/verdict.hpp"
#include "spec/spec.hpp"

using namespace pkb;
using json = nlohmann::json;

namespace {

spec::ProblemSpec allreduce() { return spec::load_spec(std::string(PKB_SOURCE_DIR) + "/problems/coll_allreduce.toml"); }

spec::HardwareProfile h200() {
  spec::HardwareProfile hw;
  hw.name = "h200_test";
  hw.nvlink_gbps = 450;
  hw.hbm_gbps = 4800;
  hw.tflops = {{"bf16", 989}, {"fp32", 67}};
  return hw;
}

// The reports of pkb eval's group: W judge ranks, then W candidate ranks.
struct Ranks {
  std::vector<eval::JudgeReport> judges;
  std::vector<eval::CandidateReport> cands;
};

// W judges that ran 100 trials with nothing wrong and agreed on two rounds of the timed
// calls (`calls` a side, the reference's at `ref_us` and the candidate's at `cand_us`, both
// at the slowest rank), after the reference's baseline at `ref_us`, their own clock seeing
// their candidate rank's calls at `cand_us`; W candidate ranks whose own events agree.
Ranks timed(double cand_us, double ref_us, int calls = 10, int world = 2) {
  Ranks r;
  eval::Timing t;
  t.baseline = eval::CallTimes{std::vector<double>(calls, ref_us), 5};
  t.plan = {calls / 2, 6, 8};  // six rounds: the fewest with a 95% interval
  for (int k = 0; k < 6; ++k)
    t.rounds.push_back({std::vector<double>(calls / 2, ref_us), std::vector<double>(calls / 2, cand_us), {}});
  t.stop = "interval";
  t.reference_warmup = 3;
  t.candidate_warmup = 5;
  for (int q = 0; q < world; ++q) {
    eval::JudgeReport j;
    j.trials_run = 100;
    j.timed_calls_checked = calls;
    j.captured_calls = calls;
    j.timing = t;
    j.candidate = eval::CallTimes{std::vector<double>(calls, cand_us), 0};
    j.gate = eval::GateOverhead{6, 0, 40, 5.8};
    r.judges.push_back(j);
    eval::CandidateReport c;
    c.timing = eval::CallTimes{std::vector<double>(calls, cand_us), 5};
    r.cands.push_back(c);
  }
  return r;
}

// The group's report: every process finished with its report; candidate ranks announced
// the trials their judges ran, in pkb's order.
launch::GroupReport finished(const Ranks& r) {
  launch::GroupReport rep;
  int w = static_cast<int>(r.judges.size());
  for (int q = 0; q < 2 * w; ++q) {
    launch::RankReport rk;
    rk.rank = q;
    rk.name = (q < w ? "judge rank " : "rank ") + std::to_string(q % w);
    rk.result = q < w ? eval::to_json(r.judges[q]).dump() : eval::to_json(r.cands[q - w]).dump();
    if (q >= w) {
      rk.history = {{"init", -1, 0}, {"calibration", -1, 0}, {"reference_warmup", -1, 0}, {"reference_timing", -1, 0},
                    {"await_judge", -1, 0}, {"init", -1, 1}};
      for (int t = 0; t < r.judges[0].trials_run; ++t) {
        rk.history.push_back({"await_judge", t, 2});
        rk.history.push_back({"trial", t, 2});
      }
      for (auto ph : {"timing_setup", "candidate_warmup", "candidate_timing", "escape_check", "await_judge", "finish"})
        rk.history.push_back({ph, -1, 3});
    }
    rep.ranks.push_back(rk);
  }
  return rep;
}

// The judged record as pkb eval writes it (its JSON).
struct Judged {
  json res;
};

Judged judge(const launch::GroupReport& rep, eval::Context c) {
  static spec::ProblemSpec s = allreduce();
  c.spec = &s;
  eval::Record rec;
  rec.problem = s.slug;
  eval::judge(rec, rep, c);
  return {rec.to_json()};
}

// Whether a record, read back from its JSON, counts as a speed result.
bool counts(const json& j) { return eval::timing_counts(eval::Record::from_json(j)); }

eval::Context cuda(int world, const spec::HardwareProfile* hw = nullptr) {
  eval::Context c;
  c.device = launch::Device::cuda;
  c.world = world;
  c.hardware = hw;
  return c;
}

}  // namespace

TEST(Verdict, ExitCodesAndVerdictsAreOneTable) {
  for (std::string v : {"correct", "wrong", "compile_error", "crash", "timeout", "integrity_violation"})
    EXPECT_EQ(eval::exit_code_verdict(eval::verdict_exit_code(v)), v);
  EXPECT_EQ(eval::verdict_exit_code("integrity_violation"), 6);
  EXPECT_EQ(eval::verdict_exit_code("nonsense"), eval::kInternal);
  EXPECT_EQ(eval::exit_code_verdict(2), "");
}

TEST(Verdict, GroupsThatDidNotFinish) {
  launch::GroupReport rep;
  rep.ranks.resize(2);
  rep.outcome = launch::Outcome::Timeout;
  rep.summary = "timeout: rank 1 spent over 15 s in trial 0";
  EXPECT_EQ(judge(rep, cuda(2)).res["verdict"], "timeout");
  rep.outcome = launch::Outcome::Crash;
  rep.summary = "crash: rank 0 was killed by signal 11";
  EXPECT_EQ(judge(rep, cuda(2)).res["verdict"], "crash");
  rep.ranks[1].error_kind = "abi";
  rep.ranks[1].error_message = "the candidate does not export pkb_run()";
  EXPECT_EQ(judge(rep, cuda(2)).res["verdict"], "compile_error");
  rep.ranks[1].error_kind = "sandbox";
  rep.ranks[1].error_message = "rank 1: in pkb_init, the candidate tried fork/clone";
  Judged s = judge(rep, cuda(2));
  EXPECT_EQ(s.res["verdict"], "integrity_violation");
  EXPECT_EQ(s.res["failure"]["reason"], "sandbox");
  rep.ranks[1].error_kind.clear();
  rep.ranks[0].signal = SIGSYS;
  EXPECT_EQ(judge(rep, cuda(2)).res["verdict"], "integrity_violation");
}

TEST(Verdict, AJudgesFailureNamesWhereItHappened) {
  Ranks r = timed(1, 1);
  eval::Failure f;
  f.verdict = eval::Verdict::integrity_violation;
  f.phase = "timing";
  f.trial = 1000004;
  f.rank = 1;
  f.output = "y";
  f.reason = "late_work";
  f.detail = "timed call 4: late";
  for (auto& j : r.judges) j.failure = f;
  Judged j = judge(finished(r), cuda(2));
  EXPECT_EQ(j.res["verdict"], "integrity_violation");
  EXPECT_EQ(j.res["message"], "rank 1, output 'y', during timing: timed call 4: late");
  EXPECT_EQ(j.res["failure"]["reason"], "late_work");
  EXPECT_TRUE(j.res["timing"].is_null());
}

// The speedup is the Hodges-Lehmann estimate of the rounds' log ratios (each round's
// median reference call over its median candidate call), with its 95% signed-rank interval;
// the record has both sides' calls, the baseline, and how the rounds went.
TEST(Verdict, SpeedupFromTheRounds) {
  Ranks r = timed(100, 300);
  for (auto& j : r.judges) {
    j.timing->rounds[0].candidate_us = std::vector<double>(5, 150);  // these rounds: 2.0
    j.timing->rounds[1].candidate_us = std::vector<double>(5, 150);
    j.timing->rounds.push_back({std::vector<double>(5, 300), std::vector<double>(5, 100), {}});
    j.timing->rounds.push_back({std::vector<double>(5, 300), std::vector<double>(5, 150), {}});
  }
  Judged j = judge(finished(r), cuda(2));
  EXPECT_EQ(j.res["verdict"], "correct") << j.res["message"];
  // Three rounds at 2.0, five at 3.0: the pairwise means' median is the one between.
  double hl = std::sqrt(2.0 * 3.0);
  EXPECT_NEAR(j.res["speedup"].get<double>(), hl, 1e-9);
  EXPECT_NEAR(j.res["speedup_interval"]["lo"].get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(j.res["speedup_interval"]["hi"].get<double>(), 3.0, 1e-9);
  EXPECT_EQ(j.res["speedup_interval"]["method"], "rounds");
  EXPECT_EQ(j.res["run"]["counts"]["candidate"]["iters"], 40);
  EXPECT_EQ(j.res["run"]["counts"]["candidate"]["warmup"], 5);
  EXPECT_EQ(j.res["run"]["counts"]["reference"]["baseline"], 10);
  EXPECT_DOUBLE_EQ(j.res["timing"]["baseline"]["median_us"].get<double>(), 300);
  EXPECT_EQ(j.res["timing"]["rounds"]["count"], 8);
  EXPECT_EQ(j.res["timing"]["rounds"]["medians_us"].size(), 8u);
  EXPECT_EQ(j.res["timing"]["rounds"]["stop"], "interval");
  EXPECT_EQ(j.res["timing"]["clock"], "judge");
  EXPECT_FALSE(j.res["flags"].dump().find("reference_slowed") != std::string::npos);
  EXPECT_TRUE(counts(json{{"schema", "pkb.eval/1"}, {"problem", "p"}, {"verdict", "correct"}, {"speedup", 2.0},
                          {"run", {{"device", "cuda"}, {"ranks_per_gpu", 1}}}, {"flags", json::array()}}));
  // Every call the same: the interval is the point.
  Judged same = judge(finished(timed(100, 300)), cuda(2));
  EXPECT_DOUBLE_EQ(same.res["speedup"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(same.res["speedup_interval"]["lo"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(same.res["speedup_interval"]["hi"].get<double>(), 3.0);
}

// Beside the candidate, in its process, the reference is within the candidate's reach: it
// is credited at most (1 + reference_drift) times its baseline, timed before the candidate
// was loaded; the speedup shrinks by the rest, and the record says so.
TEST(Verdict, AReferenceSlowedBesideTheCandidateIsCreditedAtMostItsBaseline) {
  Ranks r = timed(100, 300);
  for (auto& j : r.judges) j.timing->baseline.us = std::vector<double>(10, 150);  // alone it took half
  eval::Context c = cuda(2);
  c.reference_drift = 0.05;
  // Nothing of the candidate seen beside the reference: the rounds' speedup stands, however
  // the reference drifted from its baseline.
  Judged unseen = judge(finished(r), c);
  EXPECT_DOUBLE_EQ(unseen.res["speedup"].get<double>(), 3.0);
  EXPECT_EQ(unseen.res["flags"].dump().find("reference_slowed"), std::string::npos);
  EXPECT_FALSE(unseen.res["timing"].contains("candidate_beside"));
  // Its threads ran half the time the reference's blocks did.
  for (auto& j : r.judges) j.timing->host_reference = {1000, 400, 0, 10, 500};
  Judged j = judge(finished(r), c);
  EXPECT_NE(j.res["timing"]["candidate_beside"].get<std::string>().find("threads of the candidate's own ran 50.0%"),
            std::string::npos)
      << j.res["timing"];
  EXPECT_EQ(j.res["verdict"], "correct");
  EXPECT_NEAR(j.res["speedup"].get<double>(), 150 * 1.05 / 100, 1e-9);
  EXPECT_NEAR(j.res["speedup_interval"]["hi"].get<double>(), 1.575, 1e-9);
  EXPECT_NE(j.res["flags"].dump().find("reference_slowed"), std::string::npos);
  EXPECT_DOUBLE_EQ(j.res["timing"]["rounds"]["estimate"]["speedup"].get<double>(), 3.0);  // the rounds', before the cap
  EXPECT_NE(j.res["timing"]["reference_slowed"].get<std::string>().find("100.0% slower"), std::string::npos)
      << j.res["timing"]["reference_slowed"];
  j.res["run"] = {{"device", "cuda"}, {"ranks_per_gpu", 1}};
  EXPECT_TRUE(counts(j.res));  // the speedup is the capped one: it still counts
  // Within the drift: the rounds' speedup as it is.
  for (auto& x : r.judges) x.timing->baseline.us = std::vector<double>(10, 290);
  Judged within = judge(finished(r), c);
  EXPECT_DOUBLE_EQ(within.res["speedup"].get<double>(), 3.0);
  EXPECT_EQ(within.res["flags"].dump().find("reference_slowed"), std::string::npos);
  // A setting the candidate changed counts as much as its threads.
  for (auto& x : r.judges) {
    x.timing->baseline.us = std::vector<double>(10, 150);
    x.timing->host_reference = {};
  }
  for (auto& x : r.cands) x.state_changed = "cuda persisting L2 bytes: 0 -> 31457280";
  Judged state = judge(finished(r), c);
  EXPECT_NEAR(state.res["speedup"].get<double>(), 150 * 1.05 / 100, 1e-9);
  EXPECT_NE(state.res["timing"]["reference_slowed"].get<std::string>().find("persisting L2"), std::string::npos)
      << state.res["timing"];
}

TEST(Verdict, FasterThanTheRooflineIsAViolationNotASpeedup) {
  spec::HardwareProfile hw = h200();
  // 1024 x 1024 bf16 at W = 2: NVLink bound 2 MiB / 450 GB/s = 4.66 us.
  Judged fine = judge(finished(timed(4.66 / 0.94, 100)), cuda(2, &hw));
  EXPECT_EQ(fine.res["verdict"], "correct") << fine.res["message"];
  EXPECT_NEAR(fine.res["roofline"]["bound_us"].get<double>(), 4.66, 0.01);
  Judged fast = judge(finished(timed(4.66 * 0.9, 100)), cuda(2, &hw));
  EXPECT_EQ(fast.res["verdict"], "integrity_violation");
  EXPECT_TRUE(fast.res["speedup"].is_null());
  EXPECT_TRUE(fast.res["timing"].is_null());
  // The judge's times stay in the failure, for whoever looks into a wrong formula.
  EXPECT_NEAR(fast.res["failure"]["timing"]["candidate"]["median_us"].get<double>(), 4.66 * 0.9, 1e-9);
  EXPECT_NE(fast.res["message"].get<std::string>().find("roofline"), std::string::npos);
  // Ranks sharing a GPU measure nothing: no violation, flagged instead.
  eval::Context shared = cuda(2, &hw);
  shared.ranks_per_gpu = 2;
  Judged s = judge(finished(timed(1, 100)), shared);
  EXPECT_EQ(s.res["verdict"], "correct");
  EXPECT_NE(s.res["flags"].dump().find("shared_gpu"), std::string::npos);
  EXPECT_FALSE(counts(s.res));
}

TEST(Verdict, WorkEscapingTheTimedStream) {
  Ranks r = timed(10, 20);
  r.cands[1].escape = eval::EscapeCheck{20, {900, 900, 900}, {200, 200, 200}, {30, 30, 30}, "joined"};
  Judged gap = judge(finished(r), cuda(2));
  EXPECT_EQ(gap.res["verdict"], "integrity_violation");
  EXPECT_EQ(gap.res["failure"]["reason"], "timing_escape");
  EXPECT_NE(gap.res["message"].get<std::string>().find("rank 1"), std::string::npos);
  r.cands[1].escape->host_us = {240, 240, 240};  // within pkb's overhead and noise
  EXPECT_EQ(judge(finished(r), cuda(2)).res["verdict"], "correct");
  r.cands[1].escape->capture = "unjoined";
  EXPECT_EQ(judge(finished(r), cuda(2)).res["verdict"], "integrity_violation");
}

TEST(Verdict, FlagsThatPutTimingsInDoubt) {
  Ranks r = timed(10, 20);
  r.judges[0].clocks = eval::Clocks{1980, 1400, 1980, 0x8, true};
  launch::GroupReport rep = finished(r);
  rep.leftovers_ended = 3;
  Judged j = judge(rep, cuda(2));
  EXPECT_EQ(j.res["verdict"], "correct");
  for (auto f : {"throttled", "left_processes"}) EXPECT_NE(j.res["flags"].dump().find(f), std::string::npos) << f;
  j.res["run"] = {{"device", "cuda"}, {"ranks_per_gpu", 1}};
  EXPECT_FALSE(counts(j.res));
}

TEST(Verdict, ToleratedMismatchesAreSaid) {
  Ranks r = timed(100, 300);
  Judged exact = judge(finished(r), cuda(2));
  EXPECT_FALSE(exact.res.contains("mismatch_tolerated"));
  for (auto& j : r.judges) {
    j.tolerated_outputs = 3;
    j.tolerated_max = 2;
  }
  Judged j = judge(finished(r), cuda(2));
  EXPECT_EQ(j.res["verdict"], "correct");
  EXPECT_EQ(j.res["mismatch_tolerated"]["outputs"], 6);  // over both judges
  EXPECT_EQ(j.res["mismatch_tolerated"]["max_elements"], 2);
  EXPECT_NE(j.res["message"].get<std::string>().find("6 outputs (over ranks and calls) had up to 2 elements outside"),
            std::string::npos)
      << j.res["message"];
}

// Only pkb writes to a candidate rank's channel; what else wrote there is a violation,
// whatever the rest of the reports say.
TEST(Verdict, ACandidateRanksChannelSpeaksOnlyForPkb) {
  launch::GroupReport refused = finished(timed(10, 20));
  refused.ranks[3].refused_key = "j/pair/1/4";
  Judged a = judge(refused, cuda(2));
  EXPECT_EQ(a.res["verdict"], "integrity_violation");
  EXPECT_EQ(a.res["failure"]["reason"], "channel");
  EXPECT_NE(a.res["message"].get<std::string>().find("j/pair/1/4"), std::string::npos);

  launch::GroupReport reordered = finished(timed(10, 20));
  reordered.ranks[2].history.push_back({"trial", 3, 9});  // a trial after timing
  EXPECT_EQ(judge(reordered, cuda(2)).res["failure"]["reason"], "channel");

  launch::GroupReport forged = finished(timed(10, 20));
  forged.ranks[3].result = R"({"role": "candidate", "timing": {"us": [0.1]}})";
  Judged b = judge(forged, cuda(2));
  EXPECT_EQ(b.res["verdict"], "integrity_violation");
  EXPECT_NE(b.res["message"].get<std::string>().find("not pkb's"), std::string::npos);

  launch::GroupReport fewer = finished(timed(10, 20));
  auto& h = fewer.ranks[2].history;
  h.erase(std::remove_if(h.begin(), h.end(), [](auto& st) { return st.phase == "trial" && st.trial == 99; }), h.end());
  Judged c = judge(fewer, cuda(2));
  EXPECT_EQ(c.res["verdict"], "integrity_violation");
  EXPECT_NE(c.res["message"].get<std::string>().find("99 trials where its judge ran 100"), std::string::npos);
}

TEST(Verdict, PhaseOrder) {
  using Step = launch::RankReport::Step;
  EXPECT_EQ(eval::phase_order_error({}), "");
  std::vector<Step> ok = {{"init", -1, 0}, {"interpreter", -1, 0}, {"init", -1, 0}, {"sync", 0, 0}, {"trial", 0, 0},
                          {"sync", 0, 0},  {"trial", 1, 0},        {"timing_setup", -1, 0}, {"finish", -1, 0}};
  EXPECT_EQ(eval::phase_order_error(ok), "");
  std::vector<Step> back = {{"init", -1, 0}, {"trial", 2, 0}, {"trial", 1, 0}};
  EXPECT_NE(eval::phase_order_error(back).find("trial 1 after trial 2"), std::string::npos);
  std::vector<Step> unknown = {{"init", -1, 0}, {"party", -1, 0}};
  EXPECT_NE(eval::phase_order_error(unknown).find("party"), std::string::npos);
}

// The candidate rank's own events against its judge's clock: its judge saw 2 ms calls, so
// a rank whose events say 0.1 ms had its timer rewritten. The judge's times are used
// either way; the disagreement is the verdict.
TEST(Verdict, TheRanksOwnTimesMustAgreeWithItsJudgesClock) {
  Ranks honest = timed(2000, 4000);
  for (auto& c : honest.cands) c.timing->us = std::vector<double>(10, 1990);  // its events: a little less than the span
  Judged h = judge(finished(honest), cuda(2));
  EXPECT_EQ(h.res["verdict"], "correct") << h.res["message"];
  EXPECT_DOUBLE_EQ(h.res["timing"]["candidate"]["median_us"].get<double>(), 2000);
  EXPECT_DOUBLE_EQ(h.res["timing"]["candidate_self"]["median_us"].get<double>(), 1990);
  EXPECT_DOUBLE_EQ(h.res["timing"]["gate_overhead"]["median_us"].get<double>(), 6);

  Ranks forged = timed(2000, 4000);
  forged.cands[1].timing->us = std::vector<double>(10, 1000);  // half: a rewritten cuEventElapsedTime
  Judged f = judge(finished(forged), cuda(2));
  EXPECT_EQ(f.res["verdict"], "integrity_violation");
  EXPECT_EQ(f.res["failure"]["reason"], "timing_report");
  EXPECT_EQ(f.res["failure"]["rank"], 1);
  EXPECT_TRUE(f.res["speedup"].is_null());
  EXPECT_TRUE(f.res["speedup_interval"].is_null());

  // A few us apart on a tiny call is noise, not forgery.
  Ranks tiny = timed(3, 30);
  for (auto& c : tiny.cands) c.timing->us = std::vector<double>(10, 1.5);
  EXPECT_EQ(judge(finished(tiny), cuda(2)).res["verdict"], "correct");

  // The CPU device has no judge's clock: the rank's own is the only one (and never counts).
  Ranks cpu_ranks = timed(100, 4000);
  for (auto& j : cpu_ranks.judges) j.candidate.reset();
  eval::Context cpu = cuda(2);
  cpu.device = launch::Device::cpu;
  Judged c = judge(finished(cpu_ranks), cpu);
  EXPECT_EQ(c.res["verdict"], "correct");
  EXPECT_EQ(c.res["timing"]["clock"], "candidate_rank");
  EXPECT_DOUBLE_EQ(c.res["speedup"].get<double>(), 40);
}

// Rounds that ended on the budget with the interval still wide: the speedup is kept, with
// its interval, but the timing does not count.
TEST(Verdict, AWideIntervalIsFlaggedNoisy) {
  Ranks r = timed(100, 300);
  for (auto& j : r.judges) {
    j.timing->rounds[1].candidate_us = std::vector<double>(5, 300);  // 3.0 then 1.0
    j.timing->stop = "budget";
  }
  Judged j = judge(finished(r), cuda(2));
  EXPECT_EQ(j.res["verdict"], "correct");
  EXPECT_NE(j.res["flags"].dump().find("noisy_timing"), std::string::npos);
  EXPECT_EQ(j.res["timing"]["rounds"]["stop"], "budget");
  j.res["run"] = {{"device", "cuda"}, {"ranks_per_gpu", 1}};
  EXPECT_FALSE(counts(j.res));
}

// A gate whose calibration spread wide is no reason to drop a timing: its IQR widens the
// speedup's interval by what it could move (nothing where both sides take the same time,
// more the further apart they are), and only an interval beyond +-10% does not count.
TEST(Verdict, TheGatesSpreadWidensTheInterval) {
  Ranks quiet = timed(100, 300);
  Judged q = judge(finished(quiet), cuda(2));
  EXPECT_DOUBLE_EQ(q.res["timing"]["gate_overhead"]["taken_us"].get<double>(), 5.8);
  EXPECT_DOUBLE_EQ(q.res["speedup_interval"]["lo"].get<double>(), 3.0);
  Ranks spread = timed(100, 300);
  for (auto& j : spread.judges) j.gate = eval::GateOverhead{20.4, 8.1, 200, 14};
  Judged n = judge(finished(spread), cuda(2));
  EXPECT_EQ(n.res["verdict"], "correct");
  EXPECT_NEAR(n.res["speedup_interval"]["lo"].get<double>(), 308.1 / 108.1, 1e-9);
  EXPECT_NEAR(n.res["speedup_interval"]["hi"].get<double>(), 291.9 / 91.9, 1e-9);
  EXPECT_EQ(n.res["flags"].dump().find("noisy"), std::string::npos) << n.res["flags"];
  n.res["run"] = {{"device", "cuda"}, {"ranks_per_gpu", 1}};
  EXPECT_TRUE(counts(n.res));
  // Calls near the gate's own cost, 2x apart: the same spread leaves the speedup in doubt.
  Ranks tiny = timed(10, 20);
  for (auto& j : tiny.judges) j.gate = eval::GateOverhead{20.4, 8.1, 200, 14};
  Judged t = judge(finished(tiny), cuda(2));
  EXPECT_NE(t.res["flags"].dump().find("noisy_timing"), std::string::npos) << t.res["speedup_interval"];
  t.res["run"] = {{"device", "cuda"}, {"ranks_per_gpu", 1}};
  EXPECT_FALSE(counts(t.res));
  // The same code on both sides, however spread the gate: its interval stays where it was.
  Ranks same = timed(50, 50);
  for (auto& j : same.judges) j.gate = eval::GateOverhead{20.4, 8.1, 200, 14};
  EXPECT_DOUBLE_EQ(judge(finished(same), cuda(2)).res["speedup_interval"]["hi"].get<double>(), 1.0);
}

// How long a reference's call typically takes, for the warning before a long run: the
// roofline bound over the profile's typical fraction. The MAGI attention's default is over
// a minute a call on the CPU device; an all-reduce of 2 MiB is not.
TEST(Verdict, TypicalCallTimeFromTheRoofline) {
  std::vector<spec::HardwareProfile> profiles = spec::load_profiles(std::string(PKB_SOURCE_DIR) + "/hardware/profiles.toml");
  const spec::HardwareProfile* cpu = spec::find_profile(profiles, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_DOUBLE_EQ(cpu->typical_fraction, 0.005);
  spec::ProblemSpec magi = spec::load_spec(std::string(PKB_SOURCE_DIR) + "/problems/cp_magi_cso_attention.toml");
  EXPECT_GT(eval::typical_call_s(magi, "default", 1, magi.dtype, *cpu), 30);
  EXPECT_LT(eval::typical_call_s(magi, "C4=150,C8=200", 1, magi.dtype, *cpu), 1);
  spec::ProblemSpec ar = allreduce();
  EXPECT_LT(eval::typical_call_s(ar, "default", 2, ar.dtype, *cpu), 0.01);
  spec::HardwareProfile gpu = h200();
  EXPECT_DOUBLE_EQ(gpu.typical_fraction, 0.2);  // the default
}
