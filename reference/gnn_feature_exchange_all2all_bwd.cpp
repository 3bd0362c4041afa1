// Backward of GraphBolt's cooperative feature exchange: the gradient rows go back to the
// ranks that sent the features (rotated order), and each rank sums them into its nodes'
// rows: grad[seed_inverse_ids[i]] += received[i].
// Origin: ParallelKernelBench 66_gnn_feature_exchange_all2all_backward.
// Deviations: uneven random counts (one shared (W, W) tensor), Zipf-distributed ids.
#include "sparse_inputs.hpp"

namespace {

struct FeatureExchangeBackward : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    in["counts"] = pkb_sparse::cooperative_counts(ctx, ctx.size("p"));
    at::Tensor perm = at::randperm(ctx.size("S2"), ctx.rng(), ctx.options(at::kLong));
    in["seed_inverse_ids"] = pkb_sparse::zipf_ids(ctx.rng(), in["seed_inverse_ids"].numel(), perm,
                                                  ctx.arg_float("zipf_alpha"));
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto [from, to] = pkb_sparse::rotated_counts(in["counts"], ctx.rank());
    // grad_output's groups are the rows received in the forward (counts `from`); they
    // return to their senders, and this rank gets back the gradient of what it sent (`to`).
    at::Tensor back = pkb_sparse::rotated_all_to_all(ctx.comm(), in["grad_output"], from, to);
    out["grad"].zero_().index_add_(0, in["seed_inverse_ids"], back);  // (S2, H)
  }
};

}  // namespace

PKB_REFERENCE("gnn_feature_exchange_all2all_bwd", FeatureExchangeBackward);
