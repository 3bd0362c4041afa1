// VeOmni FSDP2 gradient clipping: the fp32 sum of |g|^p over the rank's gradient shards
// is all-reduced over the FSDP group (all ranks); total_norm = sum^(1/p); the gradients
// are scaled by max_norm / total_norm when total_norm > max_norm. Returns total_norm and
// the clipped gradients (the original clipped its inputs in place).
// Origin: ParallelKernelBench 21_clip_grad_norm_no_ep.
// Deviations: clipped gradients are outputs; gradients scaled so the norm is near
// max_norm, with per-rank factors; no host synchronization for the clip decision.
#include "fsdp_clip_grad_norm.hpp"

namespace {

struct ClipGradNorm : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    pkb_fsdp::make_clip_inputs(ctx, in, {"grad_0", "grad_1", "grad_2"},
                               3.0 * ctx.size("M") * ctx.size("N") * ctx.world());
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    double p = ctx.arg_float("norm_type"), max_norm = ctx.arg_float("max_norm");
    std::vector<at::Tensor> grads = {in["grad_0"], in["grad_1"], in["grad_2"]};
    at::Tensor total = pkb_fsdp::local_pth_sum(grads, p);
    ctx.comm().all_reduce(total);  // the FSDP group is every rank
    at::Tensor& norm = at::pow_out(out["total_norm"], total, 1.0 / p);
    at::Tensor coef = at::where(norm > max_norm, max_norm / norm, at::ones_like(norm));
    for (size_t i = 0; i < grads.size(); ++i) pkb_fsdp::clip_into(out.at(1 + i), grads[i], coef);  // clipped_i
  }
};

}  // namespace

PKB_REFERENCE("fsdp_clip_grad_norm", ClipGradNorm);
