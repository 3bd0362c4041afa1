// Row-wise sharded embedding lookup: rank r holds rows [r*M, (r+1)*M) of a W*M-row table
// and L indices into the whole table; it returns their rows in index order. Indices are
// grouped by owner, their counts and then the indices themselves all-to-all'd, the owners
// gather the rows, and a last all-to-all brings them back.
// Origin: ParallelKernelBench 10_embedding_lookup.
// Deviations: the rows come back in the indices' order (the original left them grouped by
// owner); Zipf-distributed indices over a popularity order shared by all ranks.
#include "sparse_inputs.hpp"

namespace {

struct ShardedEmbeddingLookup : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t rows = ctx.size("M") * ctx.world();
    at::Tensor perm = at::randperm(rows, ctx.shared_rng(), ctx.options(at::kLong));
    in["indices"] = pkb_sparse::zipf_ids(ctx.rng(), ctx.size("L"), perm, ctx.arg_float("zipf_alpha"));
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    const at::Tensor& idx = in["indices"];
    const at::Tensor& table = in["table"];
    int64_t m = table.size(0), w = ctx.world();
    at::Tensor owner = at::div(idx, m, "floor");
    at::Tensor order = std::get<1>(owner.sort(/*stable=*/true, 0, false));
    std::vector<int64_t> send = pkb_sparse::counts_of(owner, w);
    std::vector<int64_t> recv = pkb_sparse::exchange_counts(comm, send);
    at::Tensor asked = pkb_sparse::all_to_all_rows(comm, idx.index_select(0, order), send, recv);
    at::Tensor local = (asked - ctx.rank() * m).clamp(0, m - 1);
    at::Tensor found = table.index_select(0, local);
    at::Tensor back = pkb_sparse::all_to_all_rows(comm, found, recv, send);
    out["rows"].index_copy_(0, order, back);  // order is a permutation: every row written
  }
};

}  // namespace

PKB_REFERENCE("rec_sharded_embedding_lookup", ShardedEmbeddingLookup);
