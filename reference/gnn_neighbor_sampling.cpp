// Distributed two-hop neighbour sampling (PyG DistNeighborSampler style): each hop sends
// the frontier's nodes to their owners (contiguous ranges), the owners sample every
// requested node's in-edges (the k smallest (edge_key, position), in CSC order) and reply
// with neighbours, edge ids and counts; the requester restores frontier order, appends the
// new nodes (first appearance) and relabels the sampled edges at the end.
// Origin: ParallelKernelBench 64_gnn_neighbor_sampling.
// Deviations: a random power-law graph per trial, partitioned; random sampling through
// distinct per-edge keys; random seeds; tensor code instead of per-node loops.
#include "sparse_inputs.hpp"

namespace {

using pkb_sparse::segments;

// First appearance: the entries of `add` that are neither in `known` nor earlier in `add`.
at::Tensor new_nodes(const at::Tensor& known, const at::Tensor& add) {
  at::Tensor all = at::cat({known, add});
  auto [vals, perm] = all.sort(/*stable=*/true, 0, false);
  at::Tensor first = at::ones_like(vals, at::kBool);
  if (vals.numel() > 1) first.narrow(0, 1, vals.numel() - 1).copy_(vals.narrow(0, 1, vals.numel() - 1) != vals.narrow(0, 0, vals.numel() - 1));
  at::Tensor keep = at::zeros_like(first);
  keep.index_fill_(0, perm.masked_select(first), true);
  return add.masked_select(keep.narrow(0, known.numel(), add.numel()));
}

struct NeighborSampling : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t v = ctx.size("V"), vl = ctx.size("Vl"), el = ctx.size("El"), s = ctx.size("S");
    double alpha = ctx.arg_float("zipf_alpha");
    at::TensorOptions i64 = ctx.options(at::kLong);
    at::Tensor global = at::randperm(v, ctx.shared_rng(), i64);  // popularity as a source
    at::Tensor local = at::randperm(vl, ctx.rng(), i64);         // popularity as a target
    at::Tensor col = std::get<0>(pkb_sparse::zipf_ids(ctx.rng(), el, local, alpha).sort());
    in["colptr"] = at::cat({at::zeros({1}, i64), at::bincount(col, {}, vl).cumsum(0)});
    in["csc_row"] = pkb_sparse::zipf_ids(ctx.rng(), el, global, alpha);
    in["seeds"] = at::randperm(v, ctx.rng(), i64).narrow(0, 0, s).contiguous();
    // Distinct keys: which edges are the k smallest never hangs on a tie.
    in["edge_key"] = at::randperm(el, ctx.rng(), i64).to(at::kInt);
  }

  // The owner's side: sample each requested node (global ids, all mine) with fanout k.
  // Returns per request the count, and the neighbours and edge ids, request by request.
  std::tuple<at::Tensor, at::Tensor, at::Tensor> sample(pkb::Ctx& ctx, const pkb::Inputs& in, const at::Tensor& asked,
                                                        int64_t k) {
    const at::Tensor &colptr = in["colptr"], &row = in["csc_row"];
    int64_t el = row.numel();
    at::Tensor lv = asked - ctx.rank() * (colptr.numel() - 1);
    at::Tensor start = colptr.index_select(0, lv), deg = colptr.index_select(0, lv + 1) - start;
    at::Tensor take = deg.clamp_max(k);
    auto [seg, pos] = segments(deg);
    at::Tensor epos = start.index_select(0, seg) + pos;  // candidates by (request, position)
    // order by (request, key, position): stable by key, then stable by request
    at::Tensor by_key = std::get<1>(in["edge_key"].index_select(0, epos).sort(/*stable=*/true, 0, false));
    at::Tensor by_seg = by_key.index_select(0, std::get<1>(seg.index_select(0, by_key).sort(/*stable=*/true, 0, false)));
    at::Tensor seg_sorted = seg.index_select(0, by_seg);
    at::Tensor seg_start = deg.cumsum(0) - deg;
    at::Tensor rank_in_seg = at::arange(by_seg.numel(), seg.options()) - seg_start.index_select(0, seg_sorted);
    at::Tensor chosen = by_seg.masked_select(rank_in_seg < take.index_select(0, seg_sorted));
    // back to (request, position) order: candidate indices are already in that order
    chosen = std::get<0>(chosen.sort());
    at::Tensor e = epos.index_select(0, chosen);
    return {take, row.index_select(0, e), e + ctx.rank() * el};
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    int64_t w = ctx.world(), vl = ctx.size("Vl");
    // The nodes in their output, appended hop by hop (its capacity holds every node).
    at::Tensor& nodes = out["node"];
    int64_t n = in["seeds"].numel();
    at::Tensor node = nodes.narrow(0, 0, n).copy_(in["seeds"]), src = node;
    std::vector<at::Tensor> nbr_all, dst_all, edge_all;
    for (int64_t k : {ctx.size("F1"), ctx.size("F2")}) {
      if (src.numel() == 0) break;
      // requests to the owners, grouped by owner
      at::Tensor owner = at::div(src, vl, "floor");
      at::Tensor order = std::get<1>(owner.sort(/*stable=*/true, 0, false));
      std::vector<int64_t> send = pkb_sparse::counts_of(owner, w);
      std::vector<int64_t> recv = pkb_sparse::exchange_counts(comm, send);
      at::Tensor asked = pkb_sparse::all_to_all_rows(comm, src.index_select(0, order), send, recv);
      auto [take, nbrs, eids] = sample(ctx, in, asked, k);
      // replies: per-request counts (same splits, reversed), neighbours and edge ids
      std::vector<int64_t> reply_send(w), offs(w + 1, 0);
      for (int64_t s = 0; s < w; ++s) offs[s + 1] = offs[s] + recv[s];
      for (int64_t s = 0; s < w; ++s) reply_send[s] = take.narrow(0, offs[s], recv[s]).sum().item<int64_t>();
      std::vector<int64_t> reply_recv = pkb_sparse::exchange_counts(comm, reply_send);
      at::Tensor cnt = pkb_sparse::all_to_all_rows(comm, take, recv, send);  // by owner-sorted request
      at::Tensor got_nbr = pkb_sparse::all_to_all_rows(comm, nbrs, reply_send, reply_recv);
      at::Tensor got_eid = pkb_sparse::all_to_all_rows(comm, eids, reply_send, reply_recv);
      // frontier order: request i sits at sorted position inv[i]
      at::Tensor inv = at::empty_like(order);
      inv.index_copy_(0, order, at::arange(order.numel(), order.options()));
      at::Tensor cnt_src = cnt.index_select(0, inv);
      at::Tensor off_sorted = cnt.cumsum(0) - cnt;
      auto [seg, pos] = segments(cnt_src);
      at::Tensor idx = off_sorted.index_select(0, inv).index_select(0, seg) + pos;
      at::Tensor out_node = got_nbr.index_select(0, idx);
      nbr_all.push_back(out_node);
      dst_all.push_back(src.index_select(0, seg));
      edge_all.push_back(got_eid.index_select(0, idx));
      if (out_node.numel() == 0) break;
      src = new_nodes(node, out_node);
      nodes.narrow(0, n, src.numel()).copy_(src);
      n += src.numel();
      node = nodes.narrow(0, 0, n);
    }
    at::Tensor nbr = at::cat(nbr_all), dst = at::cat(dst_all);
    // relabel: position in node of every neighbour and destination
    auto [sorted, perm] = node.sort();
    int64_t edges = nbr.numel();
    out.set_size(0, 0, n);
    for (size_t i = 1; i < 4; ++i) out.set_size(i, 0, edges);  // row, col, edge
    auto where = [&](const char* name, const at::Tensor& q) {
      at::Tensor into = out[name].narrow(0, 0, edges);
      at::index_select_out(into, perm, 0, at::searchsorted(sorted, q));
    };
    where("row", nbr);
    where("col", dst);
    at::Tensor edge = out["edge"].narrow(0, 0, edges);
    at::cat_out(edge, edge_all);
  }
};

}  // namespace

PKB_REFERENCE("gnn_neighbor_sampling", NeighborSampling);
