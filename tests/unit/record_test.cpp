// The pkb.eval/1 record, typed: read back, written again, it says the same; what pkb does
// not type is kept; records of older versions read; what is no record is refused.
#include <gtest/gtest.h>

#include <stdexcept>

#include "eval/record.hpp"

using pkb::eval::Record;
using pkb::eval::Verdict;
using json = nlohmann::json;

namespace {

// A correct CUDA run's record, every field pkb writes (docs/results.md), plus a sweep's and
// an agent's, and keys a later version might add.
json full_record() {
  json stats = {{"median_us", 10.0}, {"mean_us", 10.5}, {"min_us", 9.0},    {"max_us", 14.0},
                {"iqr_us", 1.0},     {"p25_us", 9.5},   {"p75_us", 10.5}, {"samples", 100}};
  json j = json::parse(R"({
    "schema": "pkb.eval/1", "problem": "coll_allreduce", "problem_id": 1, "category": "coll",
    "time": "2026-12-06T07:00:00Z",
    "candidate": {"path": "s.cu", "abs_path": "/w/s.cu", "sha256": "ab", "backend": "cuda"},
    "run": {"world": 4, "device": "cuda", "gpu": "NVIDIA H200", "gpus": 4, "ranks_per_gpu": 1, "comm": "nccl",
            "hardware_profile": "h200_8", "size": "default", "dtype": "bf16", "seed": "42", "trials": 100,
            "warmup": 500, "iters": 100, "cache": "cold", "sandbox": true, "mps": true, "leftovers_ended": 0,
            "ranks_started": "exec", "fork_server_failed": "the fork server did not serve: it was not ready within 60 s",
            "trials_run": 100, "cpus": {"pinned": true, "timing": [15], "partner": [14]},
            "budgets_s": {"warmup": 1, "timing": 10, "trials": 60}, "settings": {"iters": 100},
            "memory_plan": {"per_device_bytes": 1},
            "counts": {"candidate": {"warmup": 500, "iters": 100, "captured": 100},
                       "reference": {"warmup": 100, "iters": 100, "baseline": 50, "baseline_warmup": 500}},
            "later_run_key": [1, 2]},
    "versions": {"pkb": "0.1.0", "commit": "abc", "nccl": 22809},
    "verdict": "correct", "message": "100 trials on 4 ranks",
    "failure": null,
    "timing": {"clock": "judge",
               "rounds": {"count": 10, "block": 10, "stop": "interval", "seconds": 0.4, "target": 0.03,
                          "estimate": {"speedup": 1.7, "lo": 1.66, "hi": 1.74, "rounds": 10, "half_width": 0.02},
                          "medians_us": [[10.1, 6.0], [10.2, 6.1]]},
               "reference_slowed": "the reference ran 12.0% slower", "copy_median_us": 4.1,
               "gate_overhead": {"median_us": 6.7, "iqr_us": 0.3, "calls": 40, "taken_us": 6.5},
               "candidate_beside": "threads of the candidate's own ran 12.0% of the time",
               "host": {"reference": {"wall_ms": 100.0, "main_run_ms": 80.0, "main_wait_ms": 1.0, "pkb_run_ms": 0.5,
                                      "new_threads_run_ms": 12.0},
                        "candidate": {"wall_ms": 90.0, "main_run_ms": 70.0, "main_wait_ms": 0.5, "pkb_run_ms": 0.5,
                                      "new_threads_run_ms": 0.0}}},
    "speedup": 1.7,
    "speedup_interval": {"lo": 1.66, "hi": 1.74, "level": 0.95, "method": "rounds"},
    "busbw_gbps": {"reference": 100.0, "candidate": 170.0},
    "roofline": {"bound_us": 5.0, "fraction": 0.8, "limiter": "nvlink", "nvlink_us": 5.0, "hbm_us": 1.0, "flops_us": 0.1},
    "flags": ["reference_slowed"],
    "mismatch_tolerated": {"outputs": 3, "max_elements": 2},
    "escape_check": {"calls": 20, "host_us": 12.0, "event_us": 11.0, "baseline_us": 0.5, "capture": "joined"},
    "clocks": {"sm_mhz_before": 1980, "sm_mhz_after": 1980, "max_sm_mhz": 1980, "throttle_reasons": 0, "throttled": false},
    "wall_s": 12.3, "build_s": 4.0, "costs_s": {"build": 4.0}, "phases_ms": {"judge": {}}, "sandbox": {"seccomp": true},
    "sweep": {"run": "m", "sample": 3, "task": "k", "parallel": 2},
    "agent": {"model": "gpt", "turn": 2, "tokens": 900, "wall_s": 30.5},
    "slurm": {"job": "1234", "folder": "/shared/x"},
    "later_key": {"a": 1}
  })");
  for (auto side : {"reference", "candidate", "baseline", "candidate_self"}) j["timing"][side] = stats;
  j["timing"]["machine"] = {{"baseline", stats}, {"rounds", stats}, {"credited", 1.1}, {"probe_baseline", stats},
                            {"probe_after_reference", stats}, {"probe_after_candidate", stats}};
  return j;
}

}  // namespace

TEST(Record, ReadBackAndWrittenAgainItSaysTheSame) {
  const json j = full_record();
  Record r = Record::from_json(j);
  EXPECT_EQ(r.verdict, Verdict::correct);
  EXPECT_EQ(r.run.world, 4);
  EXPECT_EQ(r.run.seed, "42");
  EXPECT_EQ(r.run.fork_server_failed, "the fork server did not serve: it was not ready within 60 s");
  ASSERT_TRUE(r.run.counts);
  EXPECT_EQ(r.run.counts->baseline, 50);
  ASSERT_TRUE(r.timing && r.timing->rounds);
  EXPECT_EQ(r.timing->rounds->medians_us.size(), 2u);
  EXPECT_DOUBLE_EQ(r.timing->rounds->estimate.half_width, 0.02);
  EXPECT_DOUBLE_EQ(*r.speedup, 1.7);
  EXPECT_DOUBLE_EQ(r.speedup_interval->lo, 1.66);
  EXPECT_DOUBLE_EQ(r.busbw_gbps->candidate_gbps, 170.0);
  EXPECT_EQ(r.sweep->parallel, 2);
  EXPECT_EQ(r.agent->turn, 2);
  EXPECT_EQ(r.slurm->job, "1234");
  EXPECT_TRUE(r.has_flag("reference_slowed"));
  ASSERT_TRUE(r.timing->host_reference && r.timing->machine && r.timing->machine->probe_after_reference);
  EXPECT_DOUBLE_EQ(r.timing->host_reference->new_threads_share(), 0.12);
  EXPECT_EQ(r.timing->candidate_beside.rfind("threads of", 0), 0u);
  EXPECT_EQ(r.timing->rest.count("host"), 0u);  // typed, not kept as an unknown key
  EXPECT_EQ(r.to_json(), j) << "lost or changed:\n" << json::diff(j, r.to_json()).dump(1);
}

TEST(Record, AFreshRecordHasEveryFieldOfTheSchema) {
  Record r;
  r.problem = "coll_allreduce";
  json j = r.to_json();
  for (auto key : {"schema", "problem", "problem_id", "category", "candidate", "run", "versions", "verdict", "message",
                   "failure", "timing", "speedup", "busbw_gbps", "roofline", "flags"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["verdict"], "") << "not judged yet";
  EXPECT_TRUE(j["timing"].is_null());
  EXPECT_TRUE(Record::from_json(j).verdict == std::nullopt);
}

// What pkb wrote before the rounds: no baseline, no rounds, no quartiles, a failure without
// a verdict (a compile error's), a seed written as a number by hand.
TEST(Record, OlderRecordsRead) {
  json j = {{"schema", "pkb.eval/1"},
            {"problem", "coll_allreduce"},
            {"verdict", "correct"},
            {"run", {{"device", "cuda"}, {"seed", 7}}},
            {"timing", {{"reference", {{"median_us", 100.0}, {"samples", 10}}}, {"candidate", {{"median_us", 50.0}}},
                        {"reference_cached", false}}},
            {"speedup", 2.0},
            {"flags", {"host_mismatch"}}};
  Record r = Record::from_json(j);
  EXPECT_EQ(r.run.seed, "7");
  ASSERT_TRUE(r.timing);
  EXPECT_FALSE(r.timing->quartiles);
  EXPECT_FALSE(r.timing->rounds);
  EXPECT_DOUBLE_EQ(r.timing->candidate.median, 50.0);
  EXPECT_EQ(r.timing->rest, (json{{"reference_cached", false}}));
  EXPECT_FALSE(pkb::eval::timing_counts(r)) << "an older record's hosts apart put its timing in doubt";

  json compile = {{"schema", "pkb.eval/1"},
                  {"problem", "p"},
                  {"verdict", "compile_error"},
                  {"failure", {{"reason", "compile"}, {"detail", "x.cu:1: error"}}}};
  Record c = Record::from_json(compile);
  ASSERT_TRUE(c.failure);
  EXPECT_EQ(c.failure->verdict, Verdict::compile_error);
  EXPECT_EQ(c.failure->detail, "x.cu:1: error");
}

TEST(Record, WhatIsNoRecordIsRefused) {
  EXPECT_THROW(Record::from_json(json{{"schema", "pkb.other/1"}, {"problem", "p"}, {"verdict", "correct"}}),
               std::invalid_argument);
  EXPECT_THROW(Record::from_json(json{{"schema", "pkb.eval/1"}, {"verdict", "correct"}}), std::invalid_argument);
  EXPECT_THROW(Record::from_json(json{{"schema", "pkb.eval/1"}, {"problem", "p"}, {"verdict", "exploded"}}),
               std::invalid_argument)
      << "a verdict of a later schema";
  EXPECT_FALSE(Record::is_record(json::array()));
}

// Only CUDA timings with a GPU per rank and nothing in doubt say anything about speed.
TEST(Record, TimingCountsOnlyWhereItSaysSomethingAboutSpeed) {
  Record r = Record::from_json(full_record());
  EXPECT_TRUE(pkb::eval::timing_counts(r)) << "reference_slowed: the capped speedup still counts";
  Record cpu = r;
  cpu.run.device = "cpu";
  EXPECT_FALSE(pkb::eval::timing_counts(cpu));
  Record shared = r;
  shared.run.ranks_per_gpu = 2;
  EXPECT_FALSE(pkb::eval::timing_counts(shared));
  Record noisy = r;
  noisy.flags.push_back("noisy_timing");
  EXPECT_FALSE(pkb::eval::timing_counts(noisy));
  Record wrong = r;
  wrong.verdict = Verdict::wrong;
  EXPECT_FALSE(pkb::eval::timing_counts(wrong));
}
