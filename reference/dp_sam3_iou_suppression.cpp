// SAM3's multi-GPU object suppression: the ranks' object masks and scores are
// all-gathered (uneven: num_obj_per_gpu[r] from rank r), the binary masks' pairwise IoUs
// computed, and of every overlapping pair (IoU >= iou_threshold) the object occluded
// more recently is suppressed (unless the other was never occluded): its logits become
// -10. Returns the gathered masks (fp32), scores (fp32) and the suppression flags.
// Origin: ParallelKernelBench 81_sam3_allgather_iou_suppression.
// Deviations: fixed capacity of 3 objects per rank (the count an input); box-shaped masks
// from a shared pool, so duplicates across ranks overlap; random scores and occlusions.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct Sam3IouSuppression : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t w = ctx.world(), cap = ctx.size("cap"), hm = ctx.size("Hm"), wm = ctx.size("Wm");
    at::TensorOptions i64 = ctx.options(at::kLong), f32 = ctx.options(at::kFloat);
    at::Tensor counts = at::randint(1, cap + 1, {w}, ctx.shared_rng(), i64);
    at::Tensor host = counts.cpu();  // one copy: both ends of the range below point into it
    in["num_obj_per_gpu"] = host;
    std::vector<int64_t> c(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + w);
    int64_t total = 0, offset = 0;
    for (int64_t r = 0; r < w; ++r) {
      if (r == ctx.rank()) offset = total;
      total += c[r];
    }
    // Boxes of every object (shared): a pool of total / 2 boxes (side 20% to 50% of the
    // mask), each object one of them with its corners jittered by up to 4% of the side.
    int64_t pool = std::max<int64_t>(1, total / 2), side = std::min(hm, wm);
    at::Tensor lo = at::rand({pool, 2}, ctx.shared_rng(), f32) * 0.5;
    at::Tensor size = at::rand({pool, 2}, ctx.shared_rng(), f32) * 0.3 + 0.2;
    at::Tensor pick = at::randint(0, pool, {total}, ctx.shared_rng(), i64);
    at::Tensor jitter = (at::rand({total, 4}, ctx.shared_rng(), f32) * 2 - 1) * 0.04;
    at::Tensor y0 = lo.select(1, 0).index_select(0, pick) + jitter.select(1, 0);
    at::Tensor x0 = lo.select(1, 1).index_select(0, pick) + jitter.select(1, 1);
    at::Tensor y1 = y0 + size.select(1, 0).index_select(0, pick) + jitter.select(1, 2);
    at::Tensor x1 = x0 + size.select(1, 1).index_select(0, pick) + jitter.select(1, 3);
    auto own = [&](const at::Tensor& t) { return t.narrow(0, offset, c[ctx.rank()]).mul(double(side)).view({-1, 1, 1}); };
    at::Tensor yy = at::arange(hm, f32).view({1, hm, 1}), xx = at::arange(wm, f32).view({1, 1, wm});
    at::Tensor inside = (yy >= own(y0)).logical_and(yy < own(y1)).logical_and(xx >= own(x0)).logical_and(xx < own(x1));
    at::Tensor masks = at::randn({cap, hm, wm}, ctx.rng(), f32);  // padding rows: noise
    masks.narrow(0, 0, c[ctx.rank()]).add_(inside.to(at::kFloat).mul(6).sub(3));
    in["masks"] = masks.to(ctx.dtype());
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& counts = in["num_obj_per_gpu"];  // host
    int64_t mine = counts[ctx.rank()].item<int64_t>();
    std::vector<at::Tensor> mask_parts = ctx.comm().all_gather_uneven(in["masks"].narrow(0, 0, mine).to(at::kFloat));
    std::vector<at::Tensor> score_parts = ctx.comm().all_gather_uneven(in["scores"].narrow(0, 0, mine).to(at::kFloat));
    int64_t n = 0;  // sum of the counts: the outputs' rows
    for (auto& p : mask_parts) n += p.size(0);
    for (size_t i = 0; i < out.size(); ++i) out.set_size(i, 0, n);
    at::Tensor masks = out["masks_global"].narrow(0, 0, n), scores = out["scores_global"].narrow(0, 0, n);
    at::cat_out(masks, mask_parts);
    at::cat_out(scores, score_parts);
    at::Tensor bin = (masks > 0).flatten(1).to(at::kFloat);
    at::Tensor inter = at::matmul(bin, bin.t());
    at::Tensor area = bin.sum(1);
    at::Tensor iou = inter / (area.unsqueeze(1) + area.unsqueeze(0) - inter).clamp_min(1.0);
    at::Tensor overlaps = at::triu(iou >= ctx.arg_float("iou_threshold"), 1);
    at::Tensor last = in["last_occluded"].narrow(0, 0, n);
    at::Tensor li = last.view({n, 1}), lj = last.view({1, n});
    bool reverse = ctx.arg_bool("reverse");
    at::Tensor i_after = reverse ? li < lj : li > lj, j_after = reverse ? lj < li : lj > li;
    at::Tensor sup_i = overlaps.logical_and(i_after).logical_and(lj > -1);
    at::Tensor sup_j = overlaps.logical_and(j_after).logical_and(li > -1);
    at::Tensor to_suppress = out["to_suppress"].narrow(0, 0, n);
    at::logical_or_out(to_suppress, sup_i.any(1), sup_j.any(0));
    masks.index_put_({to_suppress}, -10.0);
  }
};

}  // namespace

PKB_REFERENCE("dp_sam3_iou_suppression", Sam3IouSuppression);
