// The Tensor Parallel problems: pkb dryrun --solution reference on the CPU device, then
// tests/check_tp.py recomputes every rank's outputs in fp64 from all ranks' saved inputs
// and checks the reference against them (within half the spec's tolerance), and that an
// all-zero answer, the inputs passed through and the same run under --no-comm (same seed)
// all fail the spec's tolerance.
//
// Every problem at W = 1, 2, 4 and 8 (at W = 1 there is no communication to leave out, so
// the --no-comm comparison starts at 2), except conv3d: about a TFLOP on the CPU whatever W,
// so W = 2 only (the GPU run covers it at W = 1, 2 and 4).
#include <gtest/gtest.h>

#include "launch/subprocess.hpp"
#include "support.hpp"

using namespace pkbtest;

namespace {

struct TpCase {
  std::string problem;
  int world;
};

std::vector<TpCase> cases() {
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
  std::vector<TpCase> out;
  for (const char* p : problems)
    for (int w : {1, 2, 4, 8}) out.push_back({p, w});
  out.push_back({"tp_conv3d_rowparallel_allreduce", 2});
  return out;
}

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
  std::vector<std::string> check = {PKB_PYTHON, std::string(PKB_SOURCE_DIR) + "/tests/check_tp.py", problem, dir, w};
  if (world > 1) {
    PkbRun nc = run_pkb({"dryrun", "--problem", problem, "--device", "cpu", "-w", w, "--no-comm", "--seed", seed,
                         "--save-outputs", lonely});
    ASSERT_EQ(nc.code, 0) << nc.out << nc.err;
    check.insert(check.end(), {"--nocomm", lonely});
  }
  auto c = pkb::launch::run_process(check, 600);
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
}

INSTANTIATE_TEST_SUITE_P(TensorParallel, TpDryrun, ::testing::ValuesIn(cases()), [](const auto& info) {
  return info.param.problem + "_W" + std::to_string(info.param.world);
});
