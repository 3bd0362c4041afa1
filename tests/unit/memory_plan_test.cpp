// The memory plan's arithmetic, on real specs and made-up GPUs: no ranks, no devices.
#include <gtest/gtest.h>

#include "eval/layout.hpp"
#include "eval/memory_plan.hpp"
#include "spec/spec.hpp"

using namespace pkb;

namespace {

const uint64_t GiB = uint64_t{1} << 30, MiB = uint64_t{1} << 20;

spec::ProblemSpec shipped_spec(const std::string& slug) {
  return spec::load_spec(std::string(PKB_SOURCE_DIR) + "/problems/" + slug + ".toml");
}

eval::MemoryRequest request(const spec::ProblemSpec& s, uint64_t memory) {
  eval::MemoryRequest r;
  r.spec = &s;
  r.dtype = s.dtype;
  r.world = 2;
  r.nccl = true;
  r.memory = memory;
  r.capture_budget = 8 * GiB;
  return r;
}

uint64_t part(const std::vector<eval::MemoryPart>& parts, const std::string& prefix) {
  for (auto& p : parts)
    if (p.name.rfind(prefix, 0) == 0) return p.bytes;
  ADD_FAILURE() << "no part " << prefix;
  return 0;
}

}  // namespace

// coll_allreduce at the default size: 2 MiB in, 2 MiB out a rank; everything fits.
TEST(MemoryPlan, PartsAddUp) {
  spec::ProblemSpec s = shipped_spec("coll_allreduce");
  eval::MemoryPlan p = eval::plan_memory(request(s, 80 * GiB));
  const uint64_t x = 2 * MiB;
  EXPECT_TRUE(p.fits);
  EXPECT_EQ(p.captures, 101);  // the 100 timed calls' and one for the calls after the rounds
  EXPECT_EQ(part(p.candidate, "gate and inputs and outputs"), eval::kGateBytes + 2 * x);
  EXPECT_EQ(part(p.candidate, "the candidate's own heap"), eval::kMinCandidateHeap);
  // The captures of the candidate's outputs are the judge's, in memory the candidate never maps.
  EXPECT_EQ(part(p.judge, "captured outputs"), 101 * x);
  EXPECT_EQ(part(p.judge, "reference"), 3 * x);  // estimated: inputs, outputs and one temporary
  EXPECT_EQ(p.reference_source, "estimated");
  // The reference timed in the candidate rank works on the harness's inputs: the rest of its peak.
  EXPECT_EQ(part(p.candidate, "the reference's working memory"), 2 * x);
  uint64_t cand = eval::kGateBytes + 2 * x + eval::kMinCandidateHeap + eval::kRankRuntime + eval::kNcclBuffers + 2 * x;
  uint64_t judge = 3 * x + 101 * x + eval::kRankRuntime + eval::kNcclBuffers;
  EXPECT_EQ(p.candidate_rank, cand);
  EXPECT_EQ(p.judge_rank, judge);
  // The reference's working memory is never held by both ranks at once: counted once.
  EXPECT_EQ(p.per_gpu, cand + judge - 2 * x);
  // Room for it twice: the judges time the reference beside the rounds too.
  EXPECT_TRUE(p.judge_paces);
  // Ranks sharing a GPU add up.
  eval::MemoryRequest shared = request(s, 80 * GiB);
  shared.ranks_per_gpu = 2;
  EXPECT_EQ(eval::plan_memory(shared).per_gpu, 2 * (cand + judge - 2 * x));
  // A measured reference peak replaces the estimate.
  eval::MemoryRequest measured = request(s, 80 * GiB);
  measured.reference_peak = 100 * MiB;
  measured.reference_peak_source = "measured";
  eval::MemoryPlan m = eval::plan_memory(measured);
  EXPECT_EQ(part(m.judge, "reference"), 100 * MiB);
  EXPECT_EQ(m.reference_source, "measured");
  // A spec may declare it (gnn_feature_fetch_projection's large table), over the sizes.
  spec::ProblemSpec g = shipped_spec("gnn_feature_fetch_projection");
  ASSERT_FALSE(g.reference_peak.empty());
  eval::MemoryRequest d = request(g, 141 * GiB);
  eval::MemoryPlan dp = eval::plan_memory(d);
  EXPECT_EQ(dp.reference_source, "declared");
  auto v = g.roofline_vars("default", 2, 0, g.dtype);
  EXPECT_GE(part(dp.judge, "reference"), static_cast<uint64_t>(v["Vl"] * v["E"] * 2));  // the table at least
}

// When memory is short pkb takes fewer captures first, then a smaller default heap, and
// refuses only what cannot fit, in one line with the numbers.
TEST(MemoryPlan, ShrinksItsOwnBuffersThenRefuses) {
  spec::ProblemSpec s = shipped_spec("coll_allreduce");
  eval::MemoryRequest r = request(s, 80 * GiB);
  r.size = "M=16384,N=16384";  // 512 MiB a tensor
  const uint64_t x = 512 * MiB;
  eval::MemoryPlan roomy = eval::plan_memory(r);
  EXPECT_TRUE(roomy.fits);
  EXPECT_EQ(roomy.captures, 20);  // the budget holds 16, but 20 calls are checked at least
  EXPECT_EQ(part(roomy.candidate, "the candidate's own heap"), 4 * x);  // twice the set

  r.capture_budget = 100 * GiB;
  r.memory = 40 * GiB;
  eval::MemoryPlan sample = eval::plan_memory(r);
  EXPECT_TRUE(sample.fits) << sample.table();
  EXPECT_LT(sample.captures, 100);
  EXPECT_GE(sample.captures, 20);
  ASSERT_FALSE(sample.notes.empty());
  EXPECT_NE(sample.notes[0].find("secret sample"), std::string::npos);

  r.memory = 4 * GiB;
  eval::MemoryPlan no = eval::plan_memory(r);
  EXPECT_FALSE(no.fits);
  EXPECT_EQ(no.captures, eval::kLeastCaptures);  // under the usual 20 where memory demands
  EXPECT_EQ(part(no.candidate, "the candidate's own heap"), eval::kMinCandidateHeap);  // shrunk as far as it goes
  EXPECT_NE(no.refusal.find("coll_allreduce at --size M=16384,N=16384 on 2 ranks needs ~"), std::string::npos)
      << no.refusal;
  EXPECT_NE(no.refusal.find("which has 4.0 GiB"), std::string::npos) << no.refusal;
  EXPECT_EQ(no.refusal.find('\n'), std::string::npos);
  // A heap the user asked for is never shrunk.
  r.candidate_heap = 3 * x;
  EXPECT_EQ(part(eval::plan_memory(r).candidate, "the candidate's own heap"), 3 * x);
}

// The judges' own reference calls at the rounds' ends hold its working memory beside the
// candidate rank's: only where that fits too, else the plan says the bound is the baseline's.
TEST(MemoryPlan, TheJudgesPaceTheMachineWhereTheWorkingMemoryFitsTwice) {
  spec::ProblemSpec s = shipped_spec("coll_allreduce");
  eval::MemoryRequest r = request(s, 80 * GiB);
  r.size = "M=16384,N=16384";  // 512 MiB a tensor: 1 GiB of working memory
  eval::MemoryPlan roomy = eval::plan_memory(r);
  EXPECT_TRUE(roomy.judge_paces);
  EXPECT_TRUE(roomy.notes.empty());
  r.memory = static_cast<uint64_t>((roomy.per_gpu + 512 * MiB) / 0.95);  // fits once, not twice
  eval::MemoryPlan tight = eval::plan_memory(r);
  EXPECT_TRUE(tight.fits) << tight.table();
  EXPECT_EQ(tight.per_gpu, roomy.per_gpu);
  EXPECT_FALSE(tight.judge_paces);
  ASSERT_EQ(tight.notes.size(), 1u);
  EXPECT_NE(tight.notes[0].find("held to its baseline alone"), std::string::npos) << tight.notes[0];
  r.timing = false;
  EXPECT_FALSE(eval::plan_memory(r).judge_paces);  // nothing timed, nothing paced
}

// Without timing one capture (the trials') is all a judge rank holds of them.
TEST(MemoryPlan, UntimedRunsCaptureOneCall) {
  spec::ProblemSpec s = shipped_spec("coll_allreduce");
  eval::MemoryRequest r = request(s, 80 * GiB);
  r.timing = false;
  EXPECT_EQ(eval::plan_memory(r).captures, 1);
}
