// The Expert Parallel problems, each recomputed independently (tests/checks/ep.py) from
// what its reference saved on the CPU device (see expect_references_recomputed), one test a
// world size and size.
//
// Every problem at W = 2, 4 and 8 where its constraints allow (ep_moe_narrow excludes W = 2,
// where its EP groups are single ranks, so it runs at W = 1, 4 and 8). Default sizes,
// except that the fused MoE layers (ep_fused_moe_fwd, _lora, ep_moe_wide, _balanced,
// _narrow) run with M = 256 tokens per rank at W = 4 and 8: their expert GEMMs and the
// recomputation's would take a third of the family's CI time at M = 1024 (W = 2 keeps the
// default sizes). The CPU candidate runs once, at W = 4.
#include <gtest/gtest.h>

#include "support.hpp"

using namespace pkbtest;

namespace {

std::vector<Case> ep_cases() {
  std::vector<Case> out;
  for (const char* p : {"ep_load_balancing_loss", "ep_moe_token_preprocess", "ep_moe_all2all", "ep_moe_dispatch_permute",
                        "ep_moe_combine_unpermute", "ep_moe_lora_grad_allreduce"})
    for (int w : {2, 4, 8}) out.push_back({p, w, ""});
  for (const char* p : {"ep_fused_moe_fwd", "ep_fused_moe_fwd_lora", "ep_moe_wide", "ep_moe_balanced"})
    for (int w : {2, 4, 8}) out.push_back({p, w, w == 2 ? "" : "M=256"});
  out.push_back({"ep_moe_narrow", 1, ""});
  for (int w : {4, 8}) out.push_back({"ep_moe_narrow", w, "M=256"});
  return out;
}

}  // namespace

class EpDryrun : public ::testing::TestWithParam<CaseGroup> {};

TEST_P(EpDryrun, ReferencesMatchAnIndependentRecomputation) { expect_references_recomputed(GetParam()); }

INSTANTIATE_TEST_SUITE_P(ExpertParallel, EpDryrun, ::testing::ValuesIn(group_cases(ep_cases())),
                         [](const auto& info) { return info.param.name; });

// The CPU twin of the CUDA candidate solutions_cuda/ep_moe_dispatch_permute.cu (DeepEP-style
// dispatch through peer pointers): correct at W = 4, which checks the CUDA version's
// indexing without a GPU.
TEST(ExpertParallelCandidate, DispatchPermuteCpuTwinIsCorrect) { expect_cpu_candidate_correct("ep_moe_dispatch_permute"); }
