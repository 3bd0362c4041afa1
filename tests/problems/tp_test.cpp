// The Tensor Parallel problems, each recomputed independently (tests/checks/tp.py) from
// what its reference saved on the CPU device (see expect_references_recomputed), one test
// a world size.
//
// Every problem at W = 1, 2, 4 and 8 (at W = 1 there is no communication to leave out, so
// the --no-comm comparison starts at 2), except conv3d: about a TFLOP on the CPU whatever W at
// its default C = 512 (and the check recomputes it in fp64), so W = 2, 4 and 8 at C = 64 and
// 34 x 34 frames, a 500th of it (the GPU runs cover the default at W = 1, 2 and 4).
#include <gtest/gtest.h>

#include "support.hpp"

using namespace pkbtest;

namespace {

std::vector<Case> tp_cases() {
  const char* problems[] = {"tp_allgather_gemm_transposed",
                            "tp_allgather_gemm",
                            "tp_gemm_allreduce",
                            "tp_gemm_allgather",
                            "tp_allgather_mlp_reducescatter",
                            "tp_gemm_reducescatter",
                            "tp_rmsnorm_allreduce",
                            "tp_fp8_block_quant_allgather",
                            "tp_fp8_block_dequant_alltoall",
                            "tp_reducescatter_rmsnorm",
                            "tp_lmhead_gemv_allgather",
                            "tp_vocab_parallel_cross_entropy",
                            "tp_vocab_parallel_logprob_topk",
                            "tp_vocab_parallel_logprob_topk_chunked",
                            "tp_vocab_parallel_logprob_topk_chunked_bwd",
                            "tp_muon_newton_schulz"};
  std::vector<Case> out;
  for (const char* p : problems)
    for (int w : {1, 2, 4, 8}) out.push_back({p, w, ""});
  for (int w : {2, 4, 8}) out.push_back({"tp_conv3d_rowparallel_allreduce", w, "C=64,S=34"});
  return out;
}

}  // namespace

class TpDryrun : public ::testing::TestWithParam<CaseGroup> {};

TEST_P(TpDryrun, ReferencesMatchAnIndependentRecomputation) { expect_references_recomputed(GetParam()); }

INSTANTIATE_TEST_SUITE_P(TensorParallel, TpDryrun, ::testing::ValuesIn(group_cases(tp_cases())),
                         [](const auto& info) { return info.param.name; });
