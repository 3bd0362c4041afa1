// Tensor-parallel all-gather + GEMM: rank r holds K-slice r of the activations,
// A_r (M, Kl), and its own weight block B_r (K, N). Every rank gathers the slices along
// dim 1 into A (M, K) and returns C_r = A @ B_r (M, N).
// Origin: ParallelKernelBench 12_allgather_gemm (Megatron-style, inferred).
// Deviation: weights drawn with std 1/sqrt(K) so |C| ~ 1 (the original used std 1).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct AllGatherGemm : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& a = in["a"];
    int64_t m = a.size(0), kl = a.size(1);
    at::Tensor parts = ctx.comm().all_gather(a);  // (W*M, Kl): slice r of rank r
    at::Tensor a_full = parts.view({ctx.world(), m, kl}).permute({1, 0, 2}).reshape({m, ctx.world() * kl});
    at::matmul_out(out["c"], a_full, in["b"]);
  }
};

}  // namespace

PKB_REFERENCE("tp_allgather_gemm", AllGatherGemm);
