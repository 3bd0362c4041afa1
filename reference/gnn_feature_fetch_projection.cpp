// Distributed node-feature fetch + projection: rank r's queries are grouped by the owner
// of their row (contiguous shards), counts and ids all-to-all'd, the owners gather the
// rows, a second all-to-all returns them, and rank r projects them in query order.
// Origin: ParallelKernelBench 68_gnn_sparse_feature_fetch_projection.
// Deviations: Zipf-distributed queries, random per trial; a 1M-node default table.
#include "sparse_inputs.hpp"

namespace {

struct FeatureFetchProjection : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    at::Tensor perm = at::randperm(ctx.size("V"), ctx.shared_rng(), ctx.options(at::kLong));
    in["ids"] = pkb_sparse::zipf_ids(ctx.rng(), ctx.size("Q"), perm, ctx.arg_float("zipf_alpha"));
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    const at::Tensor& ids = in["ids"];
    const at::Tensor& table = in["table"];
    int64_t shard = table.size(0), w = ctx.world();
    at::Tensor owner = at::div(ids, shard, "floor").clamp_max(w - 1);
    at::Tensor order = std::get<1>(owner.sort(/*stable=*/true, 0, false));
    std::vector<int64_t> send = pkb_sparse::counts_of(owner, w);
    std::vector<int64_t> recv = pkb_sparse::exchange_counts(comm, send);
    at::Tensor asked = pkb_sparse::all_to_all_rows(comm, ids.index_select(0, order), send, recv);
    at::Tensor rows = table.index_select(0, (asked - ctx.rank() * shard).clamp(0, shard - 1));
    at::Tensor back = pkb_sparse::all_to_all_rows(comm, rows, recv, send);
    at::Tensor emb = at::empty_like(back);
    emb.index_copy_(0, order, back);
    at::matmul_out(out["out"], emb, in["proj"]);
  }
};

}  // namespace

PKB_REFERENCE("gnn_feature_fetch_projection", FeatureFetchProjection);
