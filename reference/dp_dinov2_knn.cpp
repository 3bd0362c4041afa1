// DINOv2's distributed k-NN: every rank's queries meet every rank's train shard; each
// rank keeps its top k (similarity, label) per query and the owner of the queries merges
// the W lists into the global top k. Similarities are exact (grid-valued features, fp32
// sums); here ties go to the smaller global train index (stable sorts, candidates merged
// in rank order), and check() accepts any other tie-break.
// Origin: ParallelKernelBench 79_dinov2_distributed_knn (dinov2/eval/knn.py).
// Deviations: grid-valued features (exact similarities), random labels, any tie-break;
// all_gather + all_to_all instead of W rounds of broadcast + gather (the same data).
#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <map>

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

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
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
    out["topk_sims"].copy_(values.narrow(1, 0, k));  // rounded to dt as copied
    at::gather_out(out["topk_labels"], merged_labels, 1, idx);
  }

  // topk_labels under ties: the label at place j must be the label of a train item whose
  // similarity is the j-th best, each item used once. So labels of equal similarity may
  // come in any order, and at the k-th place from any item of that similarity.
  at::Tensor check(const pkb::Ctx& ctx, size_t output, const pkb::CallInputs& inputs, const std::vector<at::Tensor>& got,
                   const std::vector<at::Tensor>&) const override {
    if (output != 1) return {};
    int64_t k = ctx.size("k");
    at::Tensor queries = inputs.of(ctx.rank())["test_features"].to(at::kFloat);
    std::vector<at::Tensor> sims, labels;
    for (int s = 0; s < ctx.world(); ++s) {
      sims.push_back(at::matmul(queries, inputs.of(s)["train_features_T"].to(at::kFloat)));  // exact
      labels.push_back(inputs.of(s)["train_labels"].view(-1));
    }
    // Every item at least as similar as the k-th best: (row, similarity, label).
    std::vector<at::Tensor> best;
    for (auto& x : sims) best.push_back(std::get<0>(x.topk(std::min(k, x.size(1)), 1)));
    at::Tensor kth = std::get<0>(at::cat(best, 1).topk(k, 1)).select(1, k - 1).unsqueeze(1);
    std::vector<at::Tensor> rows, values, found;
    for (size_t s = 0; s < sims.size(); ++s) {
      at::Tensor at_least = (sims[s] >= kth).nonzero();
      at::Tensor q = at_least.select(1, 0), c = at_least.select(1, 1);
      rows.push_back(q);
      values.push_back(sims[s].index({q, c}));
      found.push_back(labels[s].index_select(0, c));
    }
    at::Tensor row = at::cat(rows).cpu(), value = at::cat(values).cpu(), label = at::cat(found).cpu();
    // Per row: the items by similarity, best first, and how many of each (similarity, label).
    int64_t nq = queries.size(0);
    std::vector<std::vector<float>> keys(nq);
    std::vector<std::map<std::pair<float, int64_t>, int64_t>> left(nq);
    auto rw = row.accessor<int64_t, 1>();
    auto vw = value.accessor<float, 1>();
    auto lw = label.accessor<int64_t, 1>();
    for (int64_t i = 0; i < row.size(0); ++i) {
      keys[rw[i]].push_back(vw[i]);
      ++left[rw[i]][{vw[i], lw[i]}];
    }
    at::Tensor cand = got[1].cpu(), invalid = at::zeros({nq, k}, at::kBool);
    auto cw = cand.accessor<int64_t, 2>();
    auto bw = invalid.accessor<bool, 2>();
    for (int64_t q = 0; q < nq; ++q) {
      std::sort(keys[q].begin(), keys[q].end(), std::greater<float>());
      for (int64_t j = 0; j < k; ++j) {
        int64_t& n = left[q][{keys[q][j], cw[q][j]}];
        if (n > 0) --n;
        else bw[q][j] = true;
      }
    }
    return invalid.to(got[1].device());
  }
};

}  // namespace

PKB_REFERENCE("dp_dinov2_knn", DinoKnn);
