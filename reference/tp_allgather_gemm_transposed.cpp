// Tensor-parallel all-gather + GEMM with A in the transposed (K-major) layout.
// Rank r holds A_r^T (Kl, M), the transpose of K-slice r of the activations A (M, K), and
// its own weight block B_r (K, N). Every rank returns C_r = A @ B_r (M, N), where A^T is
// the all-gather of the A_r^T along dim 0 (one contiguous gather).
// Origin: ParallelKernelBench 11_allgather_gemm_AT (async-TP / Flux-style AG-GEMM).
// Deviation: the input is given transposed; the original took the same (M, Kl) input as
// problem 12 and transposed it inside, so 11 and 12 were the same problem.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct AllGatherGemmTransposed : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor a_t = ctx.comm().all_gather(in["a_t"]);  // (K, M): A^T
    at::matmul_out(out["c"], a_t.t(), in["b"]);
  }
};

}  // namespace

PKB_REFERENCE("tp_allgather_gemm_transposed", AllGatherGemmTransposed);
