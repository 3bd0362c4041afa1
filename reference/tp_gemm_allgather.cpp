// Column-parallel GEMM + output all-gather (Megatron ColumnParallelLinear with
// gather_output): rank r computes C_r = A_r @ B_r (M, Nl) from its own A_r (M, K) and
// column shard B_r (K, Nl); every rank returns cat(C_0, ..., C_{W-1}) along dim 1 (M, N).
// Origin: ParallelKernelBench 14_gemm_allgather.
// Deviation: B drawn with std 1/sqrt(K) so |C| ~ 1 (the original used std 1).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct GemmAllGather : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor c = at::matmul(in["a"], in["b"]);  // (M, Nl)
    int64_t m = c.size(0), nl = c.size(1);
    at::Tensor parts = ctx.comm().all_gather(c);  // (W*M, Nl)
    out["c"].view({m, ctx.world(), nl}).copy_(parts.view({ctx.world(), m, nl}).permute({1, 0, 2}));
  }
};

}  // namespace

PKB_REFERENCE("tp_gemm_allgather", GemmAllGather);
