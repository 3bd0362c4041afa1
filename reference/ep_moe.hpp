// Shared by the expert-parallel (ep_*) references: MoE routing as VeOmni's EP layer does it
// (top-k over the router's softmax, per-expert token counts, expert-major permutation,
// uneven all-to-all dispatch and combine, chunk regrouping, weighted unpermute), and the
// input generators that make the routing realistic (router logits from hidden states and
// a router weight, plus a per-expert bias drawn per trial so a few experts run hot).
#pragma once

#include <ATen/ATen.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkb/reference.hpp"

namespace pkb_ep {

inline std::vector<int64_t> to_vec(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU, at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

inline int64_t total(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

// Rows of `x` to the ranks of `comm`: in_splits[d] rows (in order) to rank d; `into`
// (total(out_splits) contiguous rows) receives out_splits[s] rows from rank s, in rank
// order. One rank: a copy of x, as the collective makes (returning x itself made
// ep_moe_all2all's reference free at W = 1, 1 us against the 98 us of reading and writing
// its rows, and its output an alias of its input).
inline void all_to_all_rows_into(pkb::Comm& comm, at::Tensor& into, const at::Tensor& x,
                                 const std::vector<int64_t>& out_splits, const std::vector<int64_t>& in_splits) {
  if (comm.size() == 1) into.copy_(x);
  else comm.all_to_all(into, x.contiguous(), out_splits, in_splits);
}

// all_to_all_rows_into a new tensor.
inline at::Tensor all_to_all_rows(pkb::Comm& comm, const at::Tensor& x, const std::vector<int64_t>& out_splits,
                                  const std::vector<int64_t>& in_splits) {
  at::Tensor y = at::empty({total(out_splits), x.size(1)}, x.options());
  all_to_all_rows_into(comm, y, x, out_splits, in_splits);
  return y;
}

// Tokens per expert, (E,) int64, of the top-k choices `selected` (M, K).
inline at::Tensor expert_counts(const at::Tensor& selected, int64_t experts) {
  return at::bincount(selected.reshape({-1}), {}, experts);
}

// routing_map (E, M) bool: token t is routed to expert e.
inline at::Tensor routing_map_of(const at::Tensor& selected, int64_t experts) {
  at::Tensor map = at::zeros({experts, selected.size(0)}, selected.options().dtype(at::kBool));
  return map.scatter_(0, selected.t().contiguous(), true);
}

// Expert-major token order: for e = 0..E-1, the tokens routed to e, ascending (the
// "permutation mapping" of VeOmni's permute); its rows are the tokens' copies as sent.
// Written into `into` (as many elements as the map has trues) where given.
inline at::Tensor expert_major_order(const at::Tensor& routing_map, at::Tensor into = {}) {
  int64_t e = routing_map.size(0), m = routing_map.size(1);
  at::Tensor tokens = at::arange(m, routing_map.options().dtype(at::kLong)).expand({e, m});
  if (into.defined()) return at::masked_select_out(into, tokens, routing_map);
  return tokens.masked_select(routing_map);
}

// Received rows come source-major: for each source s, its rows for local expert j = 0..L-1,
// counts[s][j] of them. The index that regroups them expert-major (for j, for s):
// grouped = received.index_select(0, idx); ungroup(grouped, idx) is the inverse.
inline at::Tensor regroup_index(const at::Tensor& counts) {
  at::Tensor c = counts.to(at::kLong);
  at::Tensor flat = c.reshape({-1});
  at::Tensor src_off = (flat.cumsum(0) - flat).view(c.sizes()).t().reshape({-1});  // (j, s) order
  at::Tensor ct = c.t().reshape({-1});
  at::Tensor dst_off = ct.cumsum(0) - ct;
  int64_t rows = flat.sum().item<int64_t>();
  at::Tensor base = at::repeat_interleave(src_off - dst_off, ct, 0, rows);
  return base + at::arange(rows, c.options());
}

// The inverse of the regroup: rows grouped expert-major back to source-major, as
// at::empty_like(grouped).index_copy_(0, idx, grouped) would place them. idx is a
// permutation, so this gathers by its inverse: at a copy's pace, where index_copy_'s scatter
// took three times that on the H200 (bench/combine_probe.py).
inline at::Tensor ungroup(const at::Tensor& grouped, const at::Tensor& idx) {
  return grouped.index_select(0, std::get<1>(idx.sort()));
}

// What VeOmni's preprocess computes from the local top-k choices on the EP group: rows to
// each EP rank, rows from each, and the (EP size, L) tokens from each source rank per
// local expert (all-gathered counts).
struct Plan {
  std::vector<int64_t> input_splits, output_splits;
  at::Tensor per_local;  // (S, L) int64
};

inline Plan preprocess(pkb::Comm& ep, const at::Tensor& selected, int64_t experts) {
  int64_t s = ep.size(), l = experts / s;
  at::Tensor counts = expert_counts(selected, experts);
  at::Tensor all = s > 1 ? ep.all_gather(counts).view({s, experts}) : counts.view({1, experts});
  Plan p;
  p.per_local = all.narrow(1, ep.rank() * l, l).contiguous();
  p.input_splits = to_vec(counts.view({s, l}).sum(1));
  p.output_splits = to_vec(p.per_local.sum(1));
  return p;
}

// out[t] = sum over t's experts e of weight[t, e] * rows[position of (e, t) in `order`],
// summed in fp32 and rounded once to the rows' dtype. weights (M, K) go with selected (M, K).
// The product widens the dt rows as it reads them (the fp32 weights column makes fp32 its
// dtype): no fp32 copy of the rows first. Rounded into `into` where given.
inline at::Tensor unpermute(const at::Tensor& rows, const at::Tensor& weights, const at::Tensor& selected,
                            const at::Tensor& routing_map, const at::Tensor& order, int64_t m,
                            const at::Tensor& into = {}) {
  int64_t experts = routing_map.size(0);
  at::Tensor w = at::zeros({m, experts}, weights.options().dtype(at::kFloat)).scatter_(1, selected, weights.to(at::kFloat));
  at::Tensor per_row = w.t().masked_select(routing_map);  // expert-major, as `order`
  at::Tensor out = at::zeros({m, rows.size(1)}, rows.options().dtype(at::kFloat));
  out.index_add_(0, order, at::mul(rows, per_row.unsqueeze(1)));
  return into.defined() ? into.copy_(out) : out.to(rows.scalar_type());
}

// unpermute's sum where the weights come in the rows' dtype (problem 29's routing_weights):
// one weighted gather-sum (embedding_bag, sum mode: each product and the sum in fp32, rounded
// once), each token a bag of its K rows, so every row is read once where widening, weighting
// and index_add_ are a pass each. `order` is expert-major, so a stable sort of it lists each
// token's rows together in expert order; its weights sorted by expert go with them.
inline at::Tensor unpermute_rows(const at::Tensor& rows, const at::Tensor& weights, const at::Tensor& selected,
                                 const at::Tensor& order) {
  int64_t m = selected.size(0), k = selected.size(1);
  at::Tensor by_token = std::get<1>(order.sort(/*stable=*/true, 0, false));
  at::Tensor w = weights.gather(1, std::get<1>(selected.sort(1))).reshape({-1});
  at::Tensor bags = at::arange(0, m * k, k, order.options());
  return std::get<0>(at::embedding_bag(rows, by_token, bags, /*scale_grad_by_freq=*/false, /*mode=sum*/ 0,
                                       /*sparse=*/false, w));
}

// One expert applied to its rows: (rows, N) -> (rows, N), for local expert j.
using ExpertFn = std::function<at::Tensor(const at::Tensor& x, int64_t j)>;

// VeOmni's fused MoE forward on the EP group `ep` (E experts, L = E / |ep| per rank, rank
// q of the group holds experts [q L, (q+1) L)): the router (fp32 logits, softmax, top-k),
// preprocess (all-gathered counts), expert-major permute, dispatch all-to-all, regroup by
// local expert, the experts, regroup back, combine all-to-all, weighted unpermute (into
// `into` where given).
inline at::Tensor moe_forward(pkb::Comm& ep, const at::Tensor& x, const at::Tensor& gate_weight,
                              const at::Tensor& gate_bias, int64_t top_k, const ExpertFn& expert,
                              const at::Tensor& into = {}) {
  int64_t experts = gate_weight.size(0), m = x.size(0);
  at::Tensor logits = at::linear(x.to(at::kFloat), gate_weight.to(at::kFloat), gate_bias.to(at::kFloat));
  auto [weights, selected] = logits.softmax(-1).topk(top_k, -1);
  Plan p = preprocess(ep, selected, experts);
  at::Tensor map = routing_map_of(selected, experts);
  at::Tensor order = expert_major_order(map);
  at::Tensor received = all_to_all_rows(ep, x.index_select(0, order), p.output_splits, p.input_splits);
  at::Tensor idx = regroup_index(p.per_local);
  at::Tensor grouped = received.index_select(0, idx);
  at::Tensor y = at::empty_like(grouped);
  std::vector<int64_t> per_expert = to_vec(p.per_local.sum(0));
  int64_t off = 0;
  for (int64_t j = 0; j < static_cast<int64_t>(per_expert.size()); ++j) {
    int64_t n = per_expert[j];
    if (n) y.narrow(0, off, n).copy_(expert(grouped.narrow(0, off, n), j));
    off += n;
  }
  at::Tensor back = ungroup(y, idx);
  at::Tensor returned = all_to_all_rows(ep, back, p.input_splits, p.output_splits);
  return unpermute(returned, weights, selected, map, order, m, into);
}

// Redraws (from this rank's stream) the hidden-state rows whose router decision is fragile:
// the k-th and (k+1)-th largest logits (exact, from the dt inputs) closer than `margin`. Then
// the top-k set is the same whether logits are computed in fp64, fp32 in any order, or
// rounded to bf16 (margin 0.05 covers a bf16 rounding of each logit up to |logit| 8).
inline void redraw_fragile_tokens(pkb::Ctx& ctx, at::Tensor& x, const at::Tensor& gate_weight,
                                  const at::Tensor& gate_bias, int64_t top_k, double margin) {
  int64_t experts = gate_weight.size(0), n = x.size(1);
  if (top_k >= experts) return;
  at::Tensor w = gate_weight.to(at::kDouble), b = gate_bias.to(at::kDouble);
  at::Tensor rows = at::arange(x.size(0), x.options().dtype(at::kLong));
  for (int attempt = 0; attempt < 1000; ++attempt) {
    at::Tensor top = std::get<0>(at::linear(x.index_select(0, rows).to(at::kDouble), w, b).topk(top_k + 1, -1));
    at::Tensor gap = top.select(-1, top_k - 1) - top.select(-1, top_k);
    rows = rows.masked_select(gap < margin);
    if (rows.numel() == 0) return;
    x.index_copy_(0, rows, at::randn({rows.numel(), n}, ctx.rng(), x.options().dtype(at::kFloat)).to(x.scalar_type()));
  }
  throw std::runtime_error("redraw_fragile_tokens: router decisions stay fragile");
}

// Generated routing (problems 26, 28, 29) and the fused problems' router inputs (their
// specs' gate_weight and gate_bias inits) share one model of a trained router: logits with
// std kRouterScale per token (a confident router: the top-k hold ~0.8 of the softmax mass
// at 8 experts, top-2, ~0.6 at 256, top-8) plus a per-expert bias with std kRouterSkew drawn
// per trial (hot experts: the busiest gets ~2x the mean load at 8 experts, ~7x at 256,
// where a rank's 32 experts even it out).
constexpr double kRouterScale = 2.0;
constexpr double kRouterSkew = 1.0;

// A router for generated routing: (D, E) weight (logit std `scale`) and (E,) per-expert
// bias (std `skew`), drawn from `gen` (the shared stream: every rank has the same router).
struct Router {
  at::Tensor weight, bias;
};

inline Router draw_router(at::Generator& gen, int64_t dim, int64_t experts, at::TensorOptions f32,
                          double scale = kRouterScale, double skew = kRouterSkew) {
  return {at::randn({dim, experts}, gen, f32).mul_(scale / std::sqrt(double(dim))),
          at::randn({experts}, gen, f32).mul_(skew)};
}

// Router logits (M, E) fp32 of M tokens whose hidden states are drawn from `gen`.
inline at::Tensor draw_logits(at::Generator& gen, const Router& r, int64_t m) {
  at::Tensor h = at::randn({m, r.weight.size(0)}, gen, r.weight.options());
  return at::addmm(r.bias, h, r.weight);
}

// The top-k experts (M, K) int64 (descending probability) and their softmax probabilities.
inline std::pair<at::Tensor, at::Tensor> top_k_route(const at::Tensor& logits, int64_t top_k) {
  auto [p, e] = logits.softmax(-1).topk(top_k, -1);
  return {e, p};
}

// expert_mask (E, K, M) float32, one-hot of the top-k choices (VeOmni's layout).
inline at::Tensor expert_mask_of(const at::Tensor& selected, int64_t experts) {
  return at::one_hot(selected, experts).permute({2, 1, 0}).to(at::kFloat).contiguous();
}

// The routing of every rank of a W-rank EP group, drawn identically on every rank from
// the shared stream: (W, M, K) int64 choices and (W, M, K) fp32 probabilities.
inline std::pair<at::Tensor, at::Tensor> draw_all_routing(pkb::Ctx& ctx, int64_t world, int64_t m, int64_t experts,
                                                          int64_t top_k) {
  at::Generator& gen = ctx.shared_rng();
  Router r = draw_router(gen, 64, experts, ctx.options(at::kFloat));
  at::Tensor logits = draw_logits(gen, r, world * m).view({world, m, experts});
  auto [e, p] = top_k_route(logits, top_k);
  return {e, p};
}

// Split inputs of a W-rank dispatch from every rank's counts (W, E): this rank's rows to
// each rank, rows from each rank, and tokens from each rank per local expert (W, L).
struct Splits {
  at::Tensor input_splits, output_splits, per_local;
};

inline Splits splits_of(const at::Tensor& counts, int rank) {
  int64_t w = counts.size(0), e = counts.size(1), l = e / w;
  Splits s;
  s.input_splits = counts[rank].view({w, l}).sum(1).cpu();
  s.per_local = counts.narrow(1, rank * l, l).contiguous();
  s.output_splits = s.per_local.sum(1).cpu();
  return s;
}

// The fused MoE problems' router margin (see redraw_fragile_tokens).
constexpr double kRouteMargin = 0.05;

// The fused MoE problems (31, 32, 49, 50, 51): inputs hidden_states, gate_weight,
// gate_bias and per local expert (leading dim Le) gate_proj_{weight,bias},
// up_proj_{weight,bias}, down_proj_{weight,bias}; with `lora`, lora_{gate,up,down}_{A,B}
// as well. Expert j of this rank: (its rows x) -> down(silu(gate(x)) * up(x)) in dt, each
// linear with its LoRA term (x A^T) B^T added when `lora`. Returns (M, N) in dt, written
// into `into` where given.
inline at::Tensor fused_moe(pkb::Comm& ep, const pkb::Inputs& in, int64_t top_k, bool lora,
                            const at::Tensor& into = {}) {
  auto expert = [&](const at::Tensor& x, int64_t j) {
    auto lin = [&](const at::Tensor& v, const char* proj, const char* lora_name) {
      std::string p = proj;
      at::Tensor y = at::linear(v, in[p + "_proj_weight"][j], in[p + "_proj_bias"][j]);
      if (lora) {
        std::string l = std::string("lora_") + lora_name;
        y = y + at::linear(at::linear(v, in[l + "_A"][j]), in[l + "_B"][j]);
      }
      return y;
    };
    return lin(at::silu(lin(x, "gate", "gate")) * lin(x, "up", "up"), "down", "down");
  };
  return moe_forward(ep, in["hidden_states"], in["gate_weight"], in["gate_bias"], top_k, expert, into);
}

}  // namespace pkb_ep
