// Row-parallel GEMM + reduce-scatter (Megatron sequence-parallel RowParallelLinear):
// rank r holds K-slices A_r (M, Kl) and B_r (Kl, N); rank r returns rows
// [r*M/W, (r+1)*M/W) of sum_r A_r @ B_r. Partial products and the reduce-scatter stay
// in dt (bf16), as in the original.
// Origin: ParallelKernelBench 16_gemm_reducescatter.
// Deviation: B drawn with std 1/sqrt(K), so |C| ~ 1 at every W.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct GemmReduceScatter : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor partial = at::matmul(in["a"], in["b"]);  // (M, N)
    ctx.comm().reduce_scatter(out["c"], partial);
  }
};

}  // namespace

PKB_REFERENCE("tp_gemm_reducescatter", GemmReduceScatter);
