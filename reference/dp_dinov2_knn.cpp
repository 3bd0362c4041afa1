// DINOv2's distributed k-NN: every rank's queries meet every rank's train shard; each
// rank keeps its top k (similarity, label) per query and the owner of the queries merges
// the W lists into the global top k. Similarities are exact (grid-valued features, fp32
// sums) and ties go to the smaller global train index: stable sorts, candidates merged
// in rank order.
// Origin: ParallelKernelBench 79_dinov2_distributed_knn (dinov2/eval/knn.py).
// Deviations: grid-valued features (exact similarities), random labels, ties by index;
// all_gather + all_to_all instead of W rounds of broadcast + gather (the same data).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

// L2-normalized randn rounded to multiples of 2^-10 (|values| <= 255 / 1024).
at::Tensor grid_features(pkb::Ctx& ctx, int64_t rows, int64_t cols) {
  at::Tensor x = at::randn({rows, cols}, ctx.rng(), ctx.options(at::kFloat));
  x = x / x.norm(2, -1, true);
  return x.mul_(1024).round_().clamp_(-255, 255).div_(1024).to(ctx.dtype());
}

struct DinoKnn : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    in["test_features"] = grid_features(ctx, ctx.size("Q"), ctx.size("F"));
    in["train_features_T"] = grid_features(ctx, ctx.size("T"), ctx.size("F")).t().contiguous();
  }

  // The k best columns of each row of `sims` (fp32), best first, ties in column order.
  static std::pair<at::Tensor, at::Tensor> top(const at::Tensor& sims, const at::Tensor& labels, int64_t k) {
    auto [values, idx] = sims.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true);
    idx = idx.narrow(1, 0, k);
    return {values.narrow(1, 0, k), labels.expand({sims.size(0), -1}).gather(1, idx)};
  }

  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    auto& comm = ctx.comm();
    int64_t w = ctx.world(), q = ctx.size("Q"), k = ctx.size("k");
    const at::Tensor& queries = in["test_features"];
    at::Tensor all_queries = comm.all_gather(queries);  // (W Q, F), owner r's at [r Q, (r+1) Q)
    at::Tensor sims = at::matmul(all_queries.to(at::kFloat), in["train_features_T"].to(at::kFloat));
    auto [cand_sims, cand_labels] = top(sims, in["train_labels"], k);  // (W Q, k) each
    at::Tensor got_sims = at::empty_like(cand_sims), got_labels = at::empty_like(cand_labels);
    comm.all_to_all(got_sims, cand_sims.contiguous());  // from rank s: its candidates for my queries
    comm.all_to_all(got_labels, cand_labels.contiguous());
    // (W, Q, k) -> (Q, W k): the lists in rank order, so ties keep the global index order.
    at::Tensor merged_sims = got_sims.view({w, q, k}).permute({1, 0, 2}).reshape({q, w * k});
    at::Tensor merged_labels = got_labels.view({w, q, k}).permute({1, 0, 2}).reshape({q, w * k});
    auto [values, idx] = merged_sims.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true);
    idx = idx.narrow(1, 0, k);
    return {values.narrow(1, 0, k).to(queries.scalar_type()), merged_labels.gather(1, idx)};
  }
};

}  // namespace

PKB_REFERENCE("dp_dinov2_knn", DinoKnn);
