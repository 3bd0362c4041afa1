// Reduce-scatter fused with RMSNorm (sequence-parallel residual path): every rank holds a
// flat (W*rows*H,) partial sum; the reduce-scatter (SUM, in dt) hands rank r chunk r,
// divided by W (the mean), and rank r returns RMSNorm of that chunk viewed as (rows, H),
// computed in fp32 with the shared weight gamma (H,), cast to dt.
// Origin: ParallelKernelBench 45_reducescatter_fused_rmsnorm (TensorRT-LLM / Megatron).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct ReduceScatterRmsNorm : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["x"];
    const at::Tensor& gamma = in["gamma"];
    int64_t h = gamma.numel(), chunk = x.numel() / ctx.world();
    at::Tensor mine = at::empty({chunk}, x.options());
    ctx.comm().reduce_scatter(mine, x);
    mine.div_(ctx.world());
    // ATen's RMSNorm (one fused kernel on CUDA, fp32 inside) where the original made seven
    // unfused fp32 passes: the same formula, its sums in another order.
    out.set({at::rms_norm(mine.view({chunk / h, h}), {h}, gamma, ctx.arg_float("eps"))});
  }
};

}  // namespace

PKB_REFERENCE("tp_reducescatter_rmsnorm", ReduceScatterRmsNorm);
