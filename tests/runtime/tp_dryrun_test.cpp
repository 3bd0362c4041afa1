// The Tensor Parallel problems: pkb dryrun --solution reference on the CPU device, then
// tests/check_tp.py recomputes every rank's outputs in fp64 from all ranks' saved inputs
// and checks the reference against them (within half the spec's tolerance), and that an
// all-zero answer, the inputs passed through and the same run under --no-comm (same seed)
// all fail the spec's tolerance.
//
// CI time (~6 min on 2 cores): every problem at W = 4 (the W pkb validate picks); W = 8
// too for the two whose bf16 reductions sit closest to their tolerance; the chunked
// backward at W = 2 too (4 chunks); conv3d (~1 TFLOP on the CPU) at W = 2 only; two
// problems at W = 1. W = 1, 2, 4 and 8 of every problem were checked with the same script.
#include <gtest/gtest.h>

#include "launch/subprocess.hpp"
#include "support.hpp"

using namespace pkbtest;

namespace {

struct TpCase {
  std::string problem;
  int world;
};

const TpCase kCases[] = {
    {"tp_allgather_gemm_transposed", 4},
    {"tp_allgather_gemm", 4},
    {"tp_gemm_allreduce", 4},
    {"tp_gemm_allreduce", 8},
    {"tp_gemm_allgather", 4},
    {"tp_allgather_mlp_reducescatter", 4},
    {"tp_gemm_reducescatter", 4},
    {"tp_rmsnorm_allreduce", 4},
    {"tp_fp8_block_quant_allgather", 4},
    {"tp_fp8_block_dequant_alltoall", 4},
    {"tp_reducescatter_rmsnorm", 4},
    {"tp_reducescatter_rmsnorm", 8},
    {"tp_lmhead_gemv_allgather", 4},
    {"tp_vocab_parallel_cross_entropy", 4},
    {"tp_conv3d_rowparallel_allreduce", 2},
    {"tp_vocab_parallel_logprob_topk", 4},
    {"tp_vocab_parallel_logprob_topk_chunked", 4},
    {"tp_vocab_parallel_logprob_topk_chunked_bwd", 4},
    {"tp_vocab_parallel_logprob_topk_chunked_bwd", 2},
    {"tp_muon_newton_schulz", 4},
};

}  // namespace

class TpDryrun : public ::testing::TestWithParam<TpCase> {};

TEST_P(TpDryrun, ReferenceMatchesAnIndependentRecomputation) {
  auto [problem, world] = GetParam();
  std::string w = std::to_string(world), seed = "7340" + w;
  std::string dir = temp_dir(problem + "-" + w), lonely = temp_dir(problem + "-" + w + "-nocomm");
  PkbRun r = run_pkb({"dryrun", "--problem", problem, "--device", "cpu", "-w", w, "--trials", "2", "--seed", seed,
                      "--save-outputs", dir});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "ok (")) << r.out;
  EXPECT_TRUE(survivors(r.tag).empty());
  PkbRun nc = run_pkb({"dryrun", "--problem", problem, "--device", "cpu", "-w", w, "--no-comm", "--seed", seed,
                       "--save-outputs", lonely});
  ASSERT_EQ(nc.code, 0) << nc.out << nc.err;
  auto check = pkb::launch::run_process({PKB_PYTHON, std::string(PKB_SOURCE_DIR) + "/tests/check_tp.py", problem,
                                         dir, w, "--nocomm", lonely},
                                        600);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

INSTANTIATE_TEST_SUITE_P(TensorParallel, TpDryrun, ::testing::ValuesIn(kCases), [](const auto& info) {
  return info.param.problem + "_W" + std::to_string(info.param.world);
});

TEST(TpDryrunOne, SingleRankRunsWithoutPeers) {
  // W = 1: every collective is the identity; the check recomputes the same math.
  for (std::string problem : {"tp_gemm_reducescatter", "tp_vocab_parallel_logprob_topk_chunked_bwd"}) {
    std::string dir = temp_dir(problem + "-1");
    PkbRun r = run_pkb({"dryrun", "--problem", problem, "--device", "cpu", "-w", "1", "--save-outputs", dir});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    auto check = pkb::launch::run_process(
        {PKB_PYTHON, std::string(PKB_SOURCE_DIR) + "/tests/check_tp.py", problem, dir, "1"}, 300);
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }
}
