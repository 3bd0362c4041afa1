// Every problem judged end to end: the problem's own reference as the candidate (`pkb eval
// --solution @reference`) through the judged path (the harness's buffers, poisoned
// outputs, the judges' captures and comparisons, the sandbox), on the CPU device, at W = 1
// and at the smallest W >= 2 each problem takes, every verdict `correct`. A verdict that is
// not is a defect of pkb (a spec, a comparison, the harness), never of the candidate.
//
// The problems of one W and size run in one pkb call (one start of the ranks), as the
// family tests' dryruns do. Three trials each, timing off (CPU timings say nothing; the
// timed path is covered below on a few problems). Sizes are the defaults but for the
// problems whose default trials take seconds each on two cores, which run at the smaller
// sizes of support.cpp's kCpuSizes (the H200 runs use the defaults).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace pkbtest;
using json = nlohmann::json;

namespace {


std::vector<json> read_lines(const std::string& path) {
  std::vector<json> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

PkbRun eval_reference(const std::vector<std::string>& problems, int world, const std::string& size,
                      const std::string& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {"eval", "-p"};
  args.insert(args.end(), problems.begin(), problems.end());
  args.insert(args.end(), {"-s", "@reference", "--device", "cpu", "-w", std::to_string(world), "--json", out});
  if (!size.empty()) args.insert(args.end(), {"--size", size});
  for (auto& f : problem_dtype_flags()) args.push_back(f);
  args.insert(args.end(), extra.begin(), extra.end());
  return run_pkb(args, 1500);
}

}  // namespace

class ReferenceAsCandidate : public ::testing::TestWithParam<CaseGroup> {};

TEST_P(ReferenceAsCandidate, IsCorrectOnEveryProblem) {
  const CaseGroup& g = GetParam();
  std::string out = temp_dir("reference-" + g.name) + "/r.jsonl";
  PkbRun r = eval_reference(g.problems, g.world, g.size, out, {"-n", "3", "--no-timing"});
  std::vector<json> records = g.problems.size() > 1 ? read_lines(out) : std::vector<json>{};
  if (g.problems.size() == 1) {
    std::ifstream f(out);
    records.push_back(json::parse(f));
  }
  ASSERT_EQ(records.size(), g.problems.size()) << r.out << r.err;
  for (size_t k = 0; k < records.size(); ++k) {
    const json& rec = records[k];
    EXPECT_EQ(rec["problem"], g.problems[k]);
    EXPECT_EQ(rec["verdict"], "correct") << g.problems[k] << " at W=" << g.world << ": " << rec["message"];
    EXPECT_EQ(rec["candidate"]["backend"], "reference");
    EXPECT_EQ(rec["run"]["trials_run"], 3) << g.problems[k];
  }
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(survivors(r.tag).empty());
}

INSTANTIATE_TEST_SUITE_P(AllProblems, ReferenceAsCandidate, ::testing::ValuesIn(every_problem()),
                         [](const auto& info) { return info.param.name; });

// The timed path too, on a few problems of one start: the reference's baseline and the
// rounds of both sides through the gate, the candidate's timed calls' outputs captured and
// checked.
TEST(ReferenceAsCandidateTimed, CorrectAndTimed) {
  std::string out = temp_dir("reference-timed") + "/r.jsonl";
  PkbRun r = eval_reference({"coll_allreduce", "coll_alltoall", "tp_gemm_allgather", "ep_moe_dispatch_permute"}, 2, "",
                            out, {"-n", "3", "--warmup", "2", "--iters", "5", "--min-iters", "5"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::vector<json> records = read_lines(out);
  ASSERT_EQ(records.size(), 4u);
  for (auto& rec : records) {
    EXPECT_EQ(rec["verdict"], "correct") << rec["problem"] << ": " << rec["message"];
    EXPECT_GE(rec["timing"]["candidate"]["samples"], 5) << rec["problem"];  // --iters, in whole rounds
    EXPECT_EQ(rec["run"]["counts"]["candidate"]["captured"], 5) << rec["problem"];
    EXPECT_GT(rec["speedup"].get<double>(), 0);
    EXPECT_TRUE(rec["speedup_interval"].is_object());
    EXPECT_EQ(rec["timing"]["clock"], "candidate_rank");  // the CPU device has no judge's clock
  }
  // One line a problem, then the count; no progress line where stderr is no terminal.
  EXPECT_TRUE(contains(r.out, "4 problems: 4 correct, 0 not")) << r.out;
  EXPECT_FALSE(contains(r.err, "\r")) << r.err;
}

// Several problems are for the reference alone: a candidate file answers one.
TEST(ReferenceAsCandidateTimed, SeveralProblemsOnlyForTheReference) {
  PkbRun r = run_pkb({"eval", "-p", "coll_allreduce", "coll_allgather", "-s",
                      kSrc + "/solutions_cpu/coll_allreduce.cpp", "--device", "cpu", "-w", "2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "only --solution @reference evaluates several")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// pkb sweep takes it as a folder of candidates, one for every problem, on its device.
TEST(ReferenceAsCandidateTimed, ASweepOfTheReference) {
  std::string dir = temp_dir("reference-sweep");
  PkbRun r = run_pkb({"sweep", "--solutions", "@reference", "--problems", "coll_allreduce,coll_broadcast", "--device",
                      "cpu", "-w", "2", "--trials", "2", "--warmup", "2", "--iters", "5", "--out", dir + "/r.jsonl"},
                     600);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::vector<json> records = read_lines(dir + "/r.jsonl");
  ASSERT_EQ(records.size(), 2u);
  for (auto& rec : records) {
    EXPECT_EQ(rec["verdict"], "correct");
    EXPECT_EQ(rec["candidate"]["path"], "@reference");
    EXPECT_EQ(rec["sweep"]["run"], "reference");
  }
  // A batch of one problem (pkb eval then writes its one record indented, not as a line).
  r = run_pkb({"sweep", "--solutions", "@reference", "--problems", "coll_reduce", "--device", "cpu", "-w", "2",
               "--trials", "2", "--warmup", "2", "--iters", "5", "--out", dir + "/one.jsonl"},
              600);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  records = read_lines(dir + "/one.jsonl");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["verdict"], "correct") << records[0]["message"];
}
