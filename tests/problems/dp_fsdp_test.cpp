// The Data Parallel and FSDP / ZeRO problems, each recomputed independently
// (tests/checks/dp.py, tests/checks/fsdp.py) from what its reference saved on the CPU
// device (see expect_references_recomputed), one test a world size and size.
//
// Every problem at W = 2, 4 and 8 (W = 1, with no communication to leave out, is left out
// to save CI time). Problems whose default sizes would add much to CI time run at smaller
// replaced sizes, noted per case (their tolerances do not depend on those sizes); the
// optimizer steps keep their default sizes, which their tolerances are derived at.
#include <gtest/gtest.h>

#include "support.hpp"

using namespace pkbtest;

namespace {

std::vector<CaseGroup> cases(const std::vector<std::pair<std::string, std::string>>& problems) {
  std::vector<Case> out;
  for (auto& [p, size] : problems)
    for (int w : {2, 4, 8}) out.push_back({p, w, size});
  return group_cases(out);
}

std::string name(const ::testing::TestParamInfo<CaseGroup>& info) { return info.param.name; }

}  // namespace

class DpDryrun : public ::testing::TestWithParam<CaseGroup> {};

TEST_P(DpDryrun, ReferencesMatchAnIndependentRecomputation) { expect_references_recomputed(GetParam()); }

INSTANTIATE_TEST_SUITE_P(DataParallel, DpDryrun,
                         ::testing::ValuesIn(cases({
                             {"dp_layernorm_bwd_allreduce", "M=256,N=512"},
                             {"dp_grad_acc_loss_allreduce", ""},
                             {"dp_importance_sampling_loss", "M=128,V=4096"},  // the LM-head GEMM, smaller
                             {"dp_ddp_adam_step", ""},
                             {"dp_int8_quant_grad_allreduce", "M=256"},
                             {"dp_siglip_contrastive_loss", "M=512"},
                             {"dp_dinov2_knn", "N=256"},  // 1024 train features a rank
                             {"dp_dinov2_sinkhorn_knopp", "Bl=128,K=4096"},
                             {"dp_sam3_iou_suppression", ""},
                         })),
                         name);

class FsdpDryrun : public ::testing::TestWithParam<CaseGroup> {};

TEST_P(FsdpDryrun, ReferencesMatchAnIndependentRecomputation) { expect_references_recomputed(GetParam()); }

INSTANTIATE_TEST_SUITE_P(FullySharded, FsdpDryrun,
                         ::testing::ValuesIn(cases({
                             {"fsdp_clip_grad_norm", "M=256"},
                             {"fsdp_clip_grad_norm_ep", "M=256"},
                             {"fsdp_zero1_adam_step", ""},
                             {"fsdp_zero2_adam_step", ""},
                             {"fsdp_adam_unshard_allgather", ""},
                             {"fsdp_step_e2e", ""},
                             {"fsdp_tp_2d_mlp", "B=512,F=512"},
                             {"fsdp_fp8_reducescatter_grads", ""},
                             {"fsdp_fp8_allgather_params", ""},
                         })),
                         name);

// The CPU twin of solutions_cuda/fsdp_zero2_adam_step.cu (the same indexing over the host
// heap): correct over a few trials and timed calls at W = 4.
TEST(FullyShardedCandidate, Zero2AdamStepCpuTwinIsCorrect) { expect_cpu_candidate_correct("fsdp_zero2_adam_step"); }
