// GraphBolt's cooperative feature exchange: rank r gathers features[seed_inverse_ids]
// (grouped by requesting peer) and exchanges the groups in rotated order (group c to and
// from rank (r + c) mod W); it returns the rows it received.
// Origin: ParallelKernelBench 65_gnn_feature_exchange_all2all.
// Deviations: uneven random counts (one shared (W, W) tensor), Zipf-distributed ids.
#include "sparse_inputs.hpp"

namespace {

struct FeatureExchange : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t rows = in["features"].size(0);
    in["counts"] = pkb_sparse::cooperative_counts(ctx, ctx.size("p"));
    at::Tensor perm = at::randperm(rows, ctx.rng(), ctx.options(at::kLong));
    in["seed_inverse_ids"] = pkb_sparse::zipf_ids(ctx.rng(), in["seed_inverse_ids"].numel(), perm,
                                                  ctx.arg_float("zipf_alpha"));
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto [from, to] = pkb_sparse::rotated_counts(in["counts"], ctx.rank());
    at::Tensor gathered = in["features"].index_select(0, in["seed_inverse_ids"]);
    pkb_sparse::rotated_all_to_all(ctx.comm(), gathered, to, from, out["received"]);
  }
};

}  // namespace

PKB_REFERENCE("gnn_feature_exchange_all2all", FeatureExchange);
