// The verdict rules on reports made up for the purpose: no ranks are started.
#include <gtest/gtest.h>

#include <csignal>

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

// A report whose ranks all finished, each with `rank_json` (its rank number added).
launch::GroupReport finished(int world, json rank_json) {
  launch::GroupReport rep;
  for (int r = 0; r < world; ++r) {
    launch::RankReport rk;
    rk.rank = r;
    rank_json["rank"] = r;
    rk.result = rank_json.dump();
    rep.ranks.push_back(rk);
  }
  return rep;
}

json timed(double cand_us, double ref_us, int calls = 10) {
  return {{"failure", nullptr},
          {"trials_run", 100},
          {"input_sets", calls},
          {"candidate_us", std::vector<double>(calls, cand_us)},
          {"reference_us", std::vector<double>(calls, ref_us)}};
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
  c.device = "cuda";
  c.world = world;
  c.iters = 10;
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

TEST(Verdict, ARanksFailureNamesWhereItHappened) {
  json r = timed(1, 1);
  r["failure"] = {{"verdict", "integrity_violation"}, {"phase", "candidate_timing"}, {"trial", 1000004},
                  {"output", "y"}, {"reason", "late_work"}, {"detail", "timed call 4: late"}, {"rank", 1}};
  Judged j = judge(finished(2, r), cuda(2));
  EXPECT_EQ(j.res["verdict"], "integrity_violation");
  EXPECT_EQ(j.res["message"], "rank 1, output 'y', during timing: timed call 4: late");
  EXPECT_TRUE(j.res["timing"].is_null());
  EXPECT_TRUE(j.cache.is_null());
}

TEST(Verdict, SpeedupFromTheSlowestRankPerCall) {
  launch::GroupReport rep = finished(2, timed(100, 300));
  json slow = json::parse(rep.ranks[1].result);
  slow["candidate_us"] = std::vector<double>(10, 150);
  rep.ranks[1].result = slow.dump();
  Judged j = judge(rep, cuda(2));
  EXPECT_EQ(j.res["verdict"], "correct");
  EXPECT_DOUBLE_EQ(j.res["speedup"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j.cache["median_us"].get<double>(), 300);
  EXPECT_TRUE(j.res["flags"].empty()) << j.res["flags"];
  EXPECT_TRUE(eval::timing_counts(json{{"verdict", "correct"}, {"speedup", 2.0},
                                       {"run", {{"device", "cuda"}, {"ranks_per_gpu", 1}}}, {"flags", json::array()}}));
}

TEST(Verdict, FasterThanTheRooflineIsAViolationNotASpeedup) {
  spec::HardwareProfile hw = h200();
  // 1024 x 1024 bf16 at W = 2: NVLink bound 2 MiB / 450 GB/s = 4.66 us.
  Judged fine = judge(finished(2, timed(4.66 / 0.94, 100)), cuda(2, &hw));
  EXPECT_EQ(fine.res["verdict"], "correct") << fine.res["message"];
  EXPECT_NEAR(fine.res["roofline"]["bound_us"].get<double>(), 4.66, 0.01);
  Judged fast = judge(finished(2, timed(4.66 * 0.9, 100)), cuda(2, &hw));
  EXPECT_EQ(fast.res["verdict"], "integrity_violation");
  EXPECT_TRUE(fast.res["speedup"].is_null());
  EXPECT_TRUE(fast.res["timing"].is_null());
  EXPECT_NE(fast.res["message"].get<std::string>().find("roofline"), std::string::npos);
  // Ranks sharing a GPU measure nothing: no violation, flagged instead.
  eval::Context shared = cuda(2, &hw);
  shared.ranks_per_gpu = 2;
  Judged s = judge(finished(2, timed(1, 100)), shared);
  EXPECT_EQ(s.res["verdict"], "correct");
  EXPECT_NE(s.res["flags"].dump().find("shared_gpu"), std::string::npos);
  EXPECT_FALSE(eval::timing_counts(s.res));
}

TEST(Verdict, WorkEscapingTheTimedStream) {
  json r = timed(10, 20);
  r["escape"] = {{"calls", 20}, {"host_us", {900, 900, 900}}, {"event_us", {200, 200, 200}},
                 {"baseline_host_us", {30, 30, 30}}, {"capture", "joined"}};
  Judged gap = judge(finished(2, r), cuda(2));
  EXPECT_EQ(gap.res["verdict"], "integrity_violation");
  EXPECT_EQ(gap.res["failure"]["reason"], "timing_escape");
  r["escape"]["host_us"] = {240, 240, 240};  // within pkb's overhead and noise
  EXPECT_EQ(judge(finished(2, r), cuda(2)).res["verdict"], "correct");
  r["escape"]["capture"] = "unjoined";
  EXPECT_EQ(judge(finished(2, r), cuda(2)).res["verdict"], "integrity_violation");
}

TEST(Verdict, FlagsThatPutTimingsInDoubt) {
  json r = timed(10, 20, 5);  // 5 input sets for 10 calls
  r["clocks"] = {{"throttled", true}};
  launch::GroupReport rep = finished(2, r);
  rep.leftovers_ended = 3;
  Judged j = judge(rep, cuda(2));
  EXPECT_EQ(j.res["verdict"], "correct");
  for (auto f : {"throttled", "few_input_sets", "left_processes"})
    EXPECT_NE(j.res["flags"].dump().find(f), std::string::npos) << f;
  j.res["run"] = {{"device", "cuda"}, {"ranks_per_gpu", 1}};
  EXPECT_FALSE(eval::timing_counts(j.res));
}

TEST(Verdict, ToleratedMismatchesAreSaid) {
  json r = timed(100, 300);
  Judged exact = judge(finished(2, r), cuda(2));
  EXPECT_FALSE(exact.res.contains("mismatch_tolerated"));
  r["tolerated"] = {{"outputs", 3}, {"max_elements", 2}};
  Judged j = judge(finished(2, r), cuda(2));
  EXPECT_EQ(j.res["verdict"], "correct");
  EXPECT_EQ(j.res["mismatch_tolerated"]["outputs"], 6);  // over both ranks
  EXPECT_EQ(j.res["mismatch_tolerated"]["max_elements"], 2);
  EXPECT_NE(j.res["message"].get<std::string>().find("6 outputs (over ranks and calls) had up to 2 elements outside"),
            std::string::npos)
      << j.res["message"];
}
