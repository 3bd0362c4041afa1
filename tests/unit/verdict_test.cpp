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

// W judges that ran `trials` trials with nothing wrong, timed the reference at `ref_us` a
// call (one stable attempt) and their candidate rank's calls at `cand_us` by their own
// clock; W candidate ranks whose own events agree.
Ranks timed(double cand_us, double ref_us, int calls = 10, int world = 2) {
  Ranks r;
  for (int q = 0; q < world; ++q) {
    eval::JudgeReport j;
    j.trials_run = 100;
    j.timed_calls_checked = calls;
    j.captured_calls = calls;
    j.reference = {{eval::CallTimes{std::vector<double>(calls, ref_us), 5, calls * ref_us}, eval::Clocks{}}};
    j.reference_kept = 0;
    j.candidate = eval::CallTimes{std::vector<double>(calls, cand_us), 0, 0};
    j.gate = eval::GateOverhead{6, 0.5, 40, 5.8};
    r.judges.push_back(j);
    eval::CandidateReport c;
    c.timing = eval::CallTimes{std::vector<double>(calls, cand_us), 5, calls * cand_us};
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
      rk.history = {{"await_reference", -1, 0}, {"init", -1, 1}};
      for (int t = 0; t < r.judges[0].trials_run; ++t) {
        rk.history.push_back({"await_judge", t, 2});
        rk.history.push_back({"trial", t, 2});
      }
      for (auto ph : {"timing_setup", "candidate_warmup", "escape_check", "candidate_timing", "await_judge", "finish"})
        rk.history.push_back({ph, -1, 3});
    }
    rep.ranks.push_back(rk);
  }
  return rep;
}

struct Judged {
  json res;
  json cache;
};

Judged judge(const launch::GroupReport& rep, eval::Context c) {
  static spec::ProblemSpec s = allreduce();
  c.spec = &s;
  Judged j;
  j.res = {{"run", json::object()}, {"flags", json::array()}};
  j.cache = eval::judge(j.res, rep, c);
  return j;
}

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
  EXPECT_TRUE(j.cache.is_null());
}

TEST(Verdict, SpeedupFromTheSlowestRankPerCall) {
  Ranks r = timed(100, 300);
  r.judges[1].candidate->us = std::vector<double>(10, 150);
  r.cands[1].timing->us = std::vector<double>(10, 150);
  Judged j = judge(finished(r), cuda(2));
  EXPECT_EQ(j.res["verdict"], "correct") << j.res["message"];
  EXPECT_DOUBLE_EQ(j.res["speedup"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j.cache["stats"]["median_us"].get<double>(), 300);
  EXPECT_EQ(j.cache["counts"]["iters"], 10);
  EXPECT_EQ(j.res["run"]["counts"]["candidate"]["iters"], 10);
  EXPECT_EQ(j.res["run"]["counts"]["candidate"]["warmup"], 5);
  EXPECT_EQ(j.res["timing"]["reference_cached"], false);
  EXPECT_EQ(j.res["timing"]["clock"], "judge");
  EXPECT_EQ(j.cache["samples"].size(), 10u);  // kept for the interval of later evaluations
  EXPECT_TRUE(j.res["flags"].empty()) << j.res["flags"];
  EXPECT_TRUE(eval::timing_counts(json{{"verdict", "correct"}, {"speedup", 2.0},
                                       {"run", {{"device", "cuda"}, {"ranks_per_gpu", 1}}}, {"flags", json::array()}}));
}

TEST(Verdict, ACachedReferenceTimingIsUsedAndNotCachedAgain) {
  Ranks r = timed(100, 0);
  for (auto& j : r.judges) {
    j.reference.clear();
    j.reference_kept = -1;
  }
  eval::Context c = cuda(2);
  c.cached_reference = {{"stats", eval::stats_of(std::vector<double>(7, 250)).to_json()},
                        {"counts", {{"warmup", 3}, {"iters", 7}}}};
  Judged j = judge(finished(r), c);
  EXPECT_EQ(j.res["verdict"], "correct");
  EXPECT_DOUBLE_EQ(j.res["speedup"].get<double>(), 2.5);
  EXPECT_EQ(j.res["timing"]["reference_cached"], true);
  EXPECT_EQ(j.res["run"]["counts"]["reference"]["iters"], 7);
  EXPECT_TRUE(j.cache.is_null());
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
  EXPECT_FALSE(eval::timing_counts(s.res));
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
  EXPECT_FALSE(eval::timing_counts(j.res));
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

// A reference timing the judges could not make stable is used, flagged, and never cached;
// every attempt is in the record.
TEST(Verdict, ANoisyReferenceIsFlaggedAndNotCached) {
  Ranks r = timed(100, 300);
  for (auto& j : r.judges) {
    j.reference.push_back({eval::CallTimes{std::vector<double>(10, 280), 5, 2800}, eval::Clocks{}});
    j.reference_kept = 1;
    j.reference_stable = false;
    j.reference_unstable = "IQR 30.0 us on a median of 280.0 us (over 10%)";
  }
  Judged j = judge(finished(r), cuda(2));
  EXPECT_EQ(j.res["verdict"], "correct");
  EXPECT_TRUE(j.cache.is_null());
  EXPECT_DOUBLE_EQ(j.res["timing"]["reference"]["median_us"].get<double>(), 280);  // the kept attempt
  EXPECT_EQ(j.res["timing"]["reference_attempts"].size(), 2u);
  EXPECT_NE(j.res["flags"].dump().find("noisy_reference"), std::string::npos);
  j.res["run"] = {{"device", "cuda"}, {"ranks_per_gpu", 1}};
  EXPECT_FALSE(eval::timing_counts(j.res));
}

// A stable timing from judges the parent ended for fresh ones (another problem's timing
// was unstable) is this evaluation's, not the cache's: its attempts are in the record; and
// every earlier start's unstable attempts are there too.
TEST(Verdict, AReferenceTimedByEarlierJudgesIsNotCalledCached) {
  Ranks earlier = timed(0, 250, 7);
  eval::JudgedReference t = eval::judged_reference(earlier.judges);
  ASSERT_TRUE(t.stable);
  EXPECT_DOUBLE_EQ(t.stats.median, 250);
  EXPECT_EQ(t.cache()["attempts"].size(), 1u);
  Ranks r = timed(100, 0);
  for (auto& j : r.judges) {
    j.reference.clear();
    j.reference_kept = -1;
  }
  eval::Context c = cuda(2);
  c.cached_reference = t.cache();
  c.reference_timed_here = true;
  Ranks noisy = timed(0, 300);
  for (auto& j : noisy.judges) j.reference_stable = false;
  eval::JudgedReference u = eval::judged_reference(noisy.judges);
  EXPECT_FALSE(u.stable);
  EXPECT_TRUE(u.cache().is_null());
  c.reference_redraws.push_back(u.attempts);
  Judged j = judge(finished(r), c);
  EXPECT_EQ(j.res["verdict"], "correct");
  EXPECT_DOUBLE_EQ(j.res["speedup"].get<double>(), 2.5);
  EXPECT_EQ(j.res["timing"]["reference_cached"], false);
  EXPECT_EQ(j.res["timing"]["reference_attempts"].size(), 1u);
  EXPECT_EQ(j.res["timing"]["reference_redraws"].size(), 1u);
  EXPECT_DOUBLE_EQ(j.res["timing"]["reference_redraws"][0][0]["median_us"].get<double>(), 300);
  EXPECT_TRUE(j.cache.is_null());  // the parent cached it when that start ended
}

// A gate calibration spread wide (something disturbed pkb's empty calls) puts the timing in
// doubt; a quiet one does not. What is taken off is its lower quartile, recorded.
TEST(Verdict, ANoisyGateCalibrationIsFlagged) {
  Ranks quiet = timed(100, 300);
  Judged q = judge(finished(quiet), cuda(2));
  EXPECT_DOUBLE_EQ(q.res["timing"]["gate_overhead"]["taken_us"].get<double>(), 5.8);
  EXPECT_EQ(q.res["flags"].dump().find("noisy_gate"), std::string::npos);
  Ranks noisy = timed(100, 300);
  for (auto& j : noisy.judges) j.gate = eval::GateOverhead{20.4, 8.1, 40, 14};
  Judged n = judge(finished(noisy), cuda(2));
  EXPECT_EQ(n.res["verdict"], "correct");
  EXPECT_NE(n.res["flags"].dump().find("noisy_gate"), std::string::npos);
  n.res["run"] = {{"device", "cuda"}, {"ranks_per_gpu", 1}};
  EXPECT_FALSE(eval::timing_counts(n.res));
}

// Two processes that run the same fixed host work at different speeds (the host probe) set a
// launch-bound call's speedup rather than its code: flagged, and the timing does not count.
// Not where the slower side's calls are device-bound, nor for a small difference.
TEST(Verdict, ProcessesWhoseHostsRunApartAreFlaggedWhereLaunchBound) {
  auto run = [](double ref_probe, double cand_probe, double cand_host_us) {
    Ranks r = timed(100, 50);
    r.judges[0].reference[0].times.host = eval::HostUse{{45, 48, 50}, {45, 48, 50}, 0, 300, 600, 0, 0, 0.1};
    r.judges[0].reference[0].times.host->probe = eval::HostProbe{40, 3.5, ref_probe, 1};
    r.cands[0].timing->host = eval::HostUse{{cand_host_us, cand_host_us}, {cand_host_us, cand_host_us}, 0, 300, 600, 0, 0, 0.1};
    r.cands[0].timing->host->probe = eval::HostProbe{40, 3.5, cand_probe, 1};
    Judged j = judge(finished(r), cuda(2));
    j.res["run"] = {{"device", "cuda"}, {"ranks_per_gpu", 1}};
    return j.res;
  };
  auto flagged = [](const json& res) { return res["flags"].dump().find("host_mismatch") != std::string::npos; };
  json slow_cand = run(5, 7, 95);  // 1.4x, and 95 of its 100 us on the host
  EXPECT_TRUE(flagged(slow_cand)) << slow_cand["flags"];
  EXPECT_NE(slow_cand["timing"]["host_mismatch"].get<std::string>().find("candidate rank's process"), std::string::npos);
  EXPECT_FALSE(eval::timing_counts(slow_cand));
  EXPECT_EQ(slow_cand["verdict"], "correct");
  EXPECT_FALSE(flagged(run(5, 7, 30)));   // its calls wait on the device: the host's speed does not set them
  EXPECT_FALSE(flagged(run(5, 5.5, 95)));  // 1.1x: within what the probe itself varies
  json slow_judges = run(8, 5, 30);  // the judges' process slower, the reference's calls launch-bound (48 of 50 us)
  EXPECT_TRUE(flagged(slow_judges)) << slow_judges["flags"];
  EXPECT_NE(slow_judges["timing"]["host_mismatch"].get<std::string>().find("judges"), std::string::npos);
  EXPECT_TRUE(eval::timing_counts(run(5, 5, 95)));

  // A cached reference timing keeps its judges' host: the candidate is held to that.
  Ranks cached = timed(100, 0);
  for (auto& j : cached.judges) {
    j.reference.clear();
    j.reference_kept = -1;
  }
  cached.cands[0].timing->host = eval::HostUse{{95, 95}, {95, 95}, 0, 300, 600, 0, 0, 0.1};
  cached.cands[0].timing->host->probe = eval::HostProbe{40, 3.5, 7, 1};
  eval::Context c = cuda(2);
  c.cached_reference = {{"stats", eval::stats_of(std::vector<double>(7, 50)).to_json()},
                        {"counts", {{"warmup", 3}, {"iters", 7}}},
                        {"host", {{"enqueue_median_us", 48}, {"probe", {{"op_us", 5.0}}}}}};
  Judged j = judge(finished(cached), c);
  EXPECT_NE(j.res["flags"].dump().find("host_mismatch"), std::string::npos) << j.res["flags"];
  EXPECT_FALSE(j.res["timing"]["host"].contains("reference")) << "the record's host block stays this run's";
  c.cached_reference.erase("host");  // cached before hosts were kept: nothing to compare
  EXPECT_EQ(judge(finished(cached), c).res["flags"].dump().find("host_mismatch"), std::string::npos);
}

// The machine moved between the two timings: the judges' own probe at the candidate's time
// (outside the candidate's process) against the reference's probe, either way; it speaks
// before the two processes' probes, which may then agree (both slow at their own times).
TEST(Verdict, AMachineWhoseHostMovedBetweenTheTimingsIsFlagged) {
  auto run = [](double ref_probe, std::vector<double> judges_then, double cand_probe, double cand_host_us) {
    Ranks r = timed(100, 50);
    r.judges[0].reference[0].times.host = eval::HostUse{{45, 48, 50}, {45, 48, 50}, 0, 300, 600, 0, 0, 0.1};
    r.judges[0].reference[0].times.host->probe = eval::HostProbe{40, 3.5, ref_probe, 1};
    for (double x : judges_then) r.judges[0].probes_at_candidate.push_back(eval::HostProbe{40, 3.5, x, 1});
    r.cands[0].timing->host = eval::HostUse{{cand_host_us, cand_host_us}, {cand_host_us, cand_host_us}, 0, 300, 600, 0, 0, 0.1};
    r.cands[0].timing->host->probe = eval::HostProbe{40, 3.5, cand_probe, 1};
    return judge(finished(r), cuda(2)).res;
  };
  auto why = [](const json& res) { return res["timing"].value("host_mismatch", std::string()); };
  // Slow after the candidate's calls though its own probe, before them, read fast.
  json later = run(5, {5, 7.5}, 5, 95);
  EXPECT_NE(why(later).find("the machine's host ran 1.50x slower at the candidate's timing"), std::string::npos) << why(later);
  EXPECT_FALSE(eval::timing_counts(later));
  EXPECT_EQ(why(run(5, {5, 7.5}, 5, 30)), "");  // the candidate's calls wait on the device
  // Slow at the reference's timing, fast throughout the candidate's.
  json earlier = run(7, {5, 5.2}, 5, 30);
  EXPECT_NE(why(earlier).find("slower at the reference's timing"), std::string::npos) << why(earlier);
  EXPECT_EQ(why(run(7, {5, 7}, 7, 30)), "");  // not fast throughout: the processes' probes decide, and agree here
  EXPECT_EQ(why(run(5, {5.5, 5}, 5.2, 95)), "");  // a machine that held still
  // No judges' probes (a CPU-device run, an older record): the two processes' probes, as before.
  EXPECT_NE(why(run(5, {}, 7, 95)).find("candidate rank's process"), std::string::npos);
}

// The speedup's interval: resampled medians, seeded, so the same samples give the same
// interval; it covers the point estimate, brackets 1 for two draws of one distribution and
// leaves it out for two that differ.
TEST(Verdict, SpeedupInterval) {
  std::vector<double> a, b, slow;
  for (int i = 0; i < 100; ++i) {
    a.push_back(10 + (i * 37 % 100) / 100.0);  // 10.00 .. 10.99
    b.push_back(10 + (i * 61 % 100) / 100.0);
    slow.push_back(12 + (i * 61 % 100) / 100.0);
  }
  eval::Interval same = eval::speedup_interval(a, b);
  EXPECT_LT(same.lo, 1.0);
  EXPECT_GT(same.hi, 1.0);
  EXPECT_DOUBLE_EQ(same.level, 0.95);
  eval::Interval faster = eval::speedup_interval(slow, b);
  EXPECT_GT(faster.lo, 1.1);
  EXPECT_LT(faster.hi, 1.3);
  eval::Interval again = eval::speedup_interval(slow, b);
  EXPECT_DOUBLE_EQ(again.lo, faster.lo);
  Judged j = judge(finished(timed(100, 300)), cuda(2));
  EXPECT_DOUBLE_EQ(j.res["speedup_interval"]["lo"].get<double>(), 3.0);  // every call the same
  EXPECT_DOUBLE_EQ(j.res["speedup_interval"]["hi"].get<double>(), 3.0);
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

TEST(Verdict, EachSidesHostReachesTheRecord) {
  // Where a launch-bound call's time goes: rank 0's host on each side, through the ranks'
  // reports, summed up over the loop's wall clock; the machine's share from the judge.
  Ranks r = timed(100, 50);
  r.judges[0].reference[0].times.host = eval::HostUse{{8, 9, 10}, {8, 8, 9}, 0, 300, 600, 2, 1, 0.25};
  r.judges[0].machine_busy = 0.75;
  r.cands[0].timing->host = eval::HostUse{{40, 50, 60}, {20, 25, 30}, 12, 500, 1500, 30, 7, 0.1};
  r.cands[0].timing->host->call_minor_faults = 6;
  r.cands[0].timing->host->probe = eval::HostProbe{40, 3.5, 6, 1.25};
  // The judge's own probe at the candidate's time, before its warm-up and after its calls.
  r.judges[0].probes_at_candidate = {eval::HostProbe{40, 3, 5.5, 1.0}, eval::HostProbe{41, 3, 7, 1.9}};
  Judged j = judge(finished(r), cuda(2));
  ASSERT_TRUE(j.res["timing"].contains("host")) << j.res["timing"];
  const json& ref = j.res["timing"]["host"]["reference"];
  const json& cand = j.res["timing"]["host"]["candidate"];
  EXPECT_DOUBLE_EQ(ref["enqueue_median_us"].get<double>(), 9);
  EXPECT_DOUBLE_EQ(ref["thread_cpu_share"].get<double>(), 300 / 500.0);  // 10 calls of 50 us
  EXPECT_DOUBLE_EQ(ref["machine_busy"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(cand["enqueue_median_us"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(cand["process_cpu_cores"].get<double>(), 1500 / 1000.0);
  EXPECT_EQ(cand["switches_involuntary"], 7);
  EXPECT_DOUBLE_EQ(cand["enqueue_cpu_median_us"].get<double>(), 25);
  EXPECT_EQ(cand["call_switches"], 12);
  EXPECT_DOUBLE_EQ(cand["machine_busy"].get<double>(), 0.75);  // the judge's reading, outside the candidate
  EXPECT_DOUBLE_EQ(cand["call_minor_faults"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(cand["probe"]["launch_us"].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(cand["probe"]["alloc_us"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(ref["probe"]["cpu_us"].get<double>(), -1);  // not probed: unknown, not zero
  const json& at = j.res["timing"]["host"]["judge_at_candidate"];
  ASSERT_EQ(at.size(), 2u) << j.res["timing"]["host"];
  EXPECT_DOUBLE_EQ(at[0]["op_us"].get<double>(), 5.5);
  EXPECT_DOUBLE_EQ(at[1]["alloc_us"].get<double>(), 1.9);
  EXPECT_EQ(j.res["verdict"], "correct");  // a diagnostic: the verdict and speedup are as without it
  EXPECT_DOUBLE_EQ(j.res["speedup"].get<double>(), 0.5);
}

// --profile-ops: each side's ops reach the record through the ranks' reports, with the
// calls' mean they add up against; the timing paid the profiler's callbacks on both sides,
// so it is flagged `profiled`, does not count and is not cached.
TEST(Verdict, AProfiledTimingShowsItsOpsAndCountsForNothing) {
  Ranks r = timed(100, 50);
  r.judges[0].reference[0].times.host = eval::HostUse{{8, 9, 13}, {8, 8, 9}, 0, 300, 600, 2, 1, 0.25};
  r.judges[0].reference[0].times.host->ops = {{"aten::topk", 1, 6, false}, {"aten::sort", 1, 5, true}};
  r.cands[0].timing->host = eval::HostUse{{40, 50, 60}, {20, 25, 30}, 12, 500, 1500, 30, 7, 0.1};
  r.cands[0].timing->host->ops = {{"aten::topk", 1, 18, false}, {"pkb::output_copy", 1, 3, false}};
  eval::Context c = cuda(2);
  c.profiled = true;
  Judged j = judge(finished(r), c);
  EXPECT_EQ(j.res["verdict"], "correct");
  const json& host = j.res["timing"]["host"];
  ASSERT_EQ(host["reference"]["ops"].size(), 2u) << host;
  EXPECT_EQ(host["reference"]["ops"][1]["name"], "aten::sort");
  EXPECT_EQ(host["reference"]["ops"][1]["nested"], true);
  EXPECT_DOUBLE_EQ(host["reference"]["enqueue_mean_us"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(host["candidate"]["ops"][0]["us"].get<double>(), 18);
  EXPECT_DOUBLE_EQ(host["candidate"]["enqueue_mean_us"].get<double>(), 50);
  EXPECT_NE(j.res["flags"].dump().find("profiled"), std::string::npos);
  EXPECT_TRUE(j.cache.is_null());
  j.res["run"] = {{"device", "cuda"}, {"ranks_per_gpu", 1}};
  EXPECT_FALSE(eval::timing_counts(j.res));

  // Unprofiled, the same timing has no ops, counts and is cached.
  r.judges[0].reference[0].times.host->ops.clear();
  r.cands[0].timing->host->ops.clear();
  Judged plain = judge(finished(r), cuda(2));
  EXPECT_TRUE(plain.res["timing"]["host"]["reference"]["ops"].is_null());
  EXPECT_TRUE(plain.res["timing"]["host"]["candidate"]["enqueue_mean_us"].is_null());
  EXPECT_FALSE(plain.cache.is_null());
  plain.res["run"] = {{"device", "cuda"}, {"ranks_per_gpu", 1}};
  EXPECT_TRUE(eval::timing_counts(plain.res));
}
