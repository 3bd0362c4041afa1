// VeOmni EP-aware FSDP2 gradient clipping. With ep_size = max(1, W // 2), the expert
// gradient is scaled by 1/ep_size; the fp32 sum of |non_ep|^p is all-reduced over all
// ranks, that of |ep|^p over the EP-FSDP group (strided ranks) then the EP group
// (contiguous blocks of ep_size); total_norm = (sum)^(1/p); both gradients are clipped
// by max_norm / total_norm when it exceeds max_norm. Returns the norm and the clipped
// gradients.
// Origin: ParallelKernelBench 22_clip_grad_norm_ep.
// Deviations: clipped gradients are outputs; gradients scaled so the norm is near
// max_norm, with per-rank factors; groups built once in setup().
#include "fsdp_clip_grad_norm.hpp"

namespace {

struct ClipGradNormEp : pkb::Reference {
  std::unique_ptr<pkb::Comm> ep_group, ep_fsdp_group;

  void setup(pkb::Ctx& ctx) override {
    int r = ctx.rank(), w = ctx.world(), ep = int(ctx.size("ep_size"));
    if (ep <= 1 || w % ep != 0) return;  // degenerate: no EP group, EP-FSDP = every rank
    ep_group = ctx.comm().split(r / ep, r % ep);       // {blk*ep, ..., blk*ep + ep - 1}
    ep_fsdp_group = ctx.comm().split(r % ep, r / ep);  // {i, i + ep, i + 2 ep, ...}
  }

  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    pkb_fsdp::make_clip_inputs(ctx, in, {"non_ep", "ep"}, 2.0 * ctx.size("M") * ctx.size("N") * ctx.world());
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    double p = ctx.arg_float("norm_type"), max_norm = ctx.arg_float("max_norm");
    int64_t ep_size = ctx.size("ep_size");
    at::Tensor non_ep = in["non_ep"], ep = in["ep"];
    if (ep_size > 1) ep = ep * (1.0 / double(ep_size));

    at::Tensor non_ep_total = pkb_fsdp::local_pth_sum({non_ep}, p);
    ctx.comm().all_reduce(non_ep_total);
    at::Tensor ep_total = pkb_fsdp::local_pth_sum({ep}, p);
    if (ep_group) {
      ep_fsdp_group->all_reduce(ep_total);
      ep_group->all_reduce(ep_total);
    } else {
      ctx.comm().all_reduce(ep_total);
    }
    at::Tensor& norm = at::pow_out(out["total_norm"], non_ep_total + ep_total, 1.0 / p);
    at::Tensor coef = at::where(norm > max_norm, max_norm / norm, at::ones_like(norm));
    pkb_fsdp::clip_into(out["non_ep_clipped"], non_ep, coef);
    pkb_fsdp::clip_into(out["ep_clipped"], ep, coef);
  }
};

}  // namespace

PKB_REFERENCE("fsdp_clip_grad_norm_ep", ClipGradNormEp);
