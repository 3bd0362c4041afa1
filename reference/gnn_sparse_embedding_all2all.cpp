// DGL's sparse all-to-all push: every (id, row) pair goes to the owner of its id
// (id mod W); rank r returns the pairs it owns, by source rank, each source's in order.
// Origin: ParallelKernelBench 67_gnn_sparse_embedding_all2all.
// Deviation: Zipf-distributed ids over a popularity order shared by every rank.
#include "sparse_inputs.hpp"

namespace {

struct SparseEmbeddingPush : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    at::Tensor perm = at::randperm(ctx.size("V"), ctx.shared_rng(), ctx.options(at::kLong));
    in["idx"] = pkb_sparse::zipf_ids(ctx.rng(), ctx.size("nnz"), perm, ctx.arg_float("zipf_alpha"));
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    const at::Tensor& idx = in["idx"];
    at::Tensor owner = at::remainder(idx, ctx.world());
    at::Tensor order = std::get<1>(owner.sort(/*stable=*/true, 0, false));
    std::vector<int64_t> send = pkb_sparse::counts_of(owner, ctx.world());
    std::vector<int64_t> recv = pkb_sparse::exchange_counts(comm, send);
    int64_t n = pkb_sparse::sum(recv);
    out.set_size(0, 0, n);
    out.set_size(1, 0, n);
    at::Tensor idx_out = out["recv_idx"].narrow(0, 0, n), value_out = out["recv_value"].narrow(0, 0, n);
    pkb_sparse::all_to_all_rows_into(comm, idx_out, idx.index_select(0, order), send, recv);
    pkb_sparse::all_to_all_rows_into(comm, value_out, in["value"].index_select(0, order), send, recv);
  }
};

}  // namespace

PKB_REFERENCE("gnn_sparse_embedding_all2all", SparseEmbeddingPush);
