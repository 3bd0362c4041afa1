// Row-parallel GEMM + all-reduce (Megatron RowParallelLinear): rank r holds A_r (M, K)
// and B_r (K, N); every rank returns sum_r A_r @ B_r (M, N). The partial products and
// the all-reduce stay in dt (bf16), as in the original.
// Origin: ParallelKernelBench 13_gemm_allreduce.
// Deviation: B drawn with std 1/sqrt(K*W), so the sum has |C| ~ 1 at every W.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct GemmAllReduce : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::matmul_out(out["c"], in["a"], in["b"]);
    ctx.comm().all_reduce(out["c"]);
  }
};

}  // namespace

PKB_REFERENCE("tp_gemm_allreduce", GemmAllReduce);
