// Shared by the NeMo-RL vocab-parallel log-prob problems (tp_vocab_parallel_logprob_topk,
// its chunked variant and its backward): top-k/top-p filtering, the vocab <-> sequence
// all-to-alls, and the inputs (logits and the tokens sampled from them).
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

#include "pkb/reference.hpp"

namespace pkb_tp {

// NeMo-RL's top-k then top-p filter on fp32 logits (n, V), sort based: keep the k largest
// (every value >= the k-th), then drop the smallest kept tokens while their cumulated
// probability stays <= 1 - p (the largest always stays). Returns the filtered logits
// (-inf where dropped) and the keep mask.
inline std::pair<at::Tensor, at::Tensor> top_k_top_p(const at::Tensor& logits, int64_t k, double p) {
  const double inf = std::numeric_limits<double>::infinity();
  int64_t v = logits.size(-1);
  bool need_k = k > 0, need_p = p < 1.0;
  if (!need_k && !need_p) return {logits, at::ones_like(logits, at::kBool)};
  k = std::min(k, v);
  if (!need_p) {
    at::Tensor keep = logits >= std::get<0>(logits.topk(k, -1)).narrow(-1, k - 1, 1);
    return {logits.masked_fill(keep.logical_not(), -inf), keep};
  }
  auto [sorted, idx] = logits.sort(-1, /*descending=*/false);
  at::Tensor keep_sorted = at::ones_like(sorted, at::kBool);
  if (need_k) {
    keep_sorted = sorted >= sorted.narrow(-1, v - k, 1);
    sorted = sorted.masked_fill(keep_sorted.logical_not(), -inf);
  }
  at::Tensor top_p = sorted.softmax(-1).cumsum(-1) > (1.0 - p);
  top_p.select(-1, v - 1).fill_(true);
  sorted = sorted.masked_fill(top_p.logical_not(), -inf);
  keep_sorted = keep_sorted.logical_and(top_p);
  return {sorted.scatter(-1, idx, sorted), keep_sorted.scatter(-1, idx, keep_sorted)};
}

// The same filter in compact form, for 0 < k < V: a top-k of each row instead of a sort of
// the whole row. Returns the k largest values ascending (as the filter sorts them) in
// fp32, their vocab indices and which of them the top-p cut keeps, (n, k) each; every
// other token of the row is dropped. Empty when some row's k-th and (k+1)-th largest
// values tie (the filter then keeps more than k, every value >= the k-th): use top_k_top_p
// there. `logits` may be in the inputs' dtype: bf16 and fp16 widen to fp32 exactly and in
// order, so the top-k of the narrow rows is the fp32 filter's, at half the bytes read.
struct Kept {
  at::Tensor vals, idx, keep;
};

inline std::optional<Kept> top_k_top_p_kept(const at::Tensor& logits, int64_t k, double p) {
  if (k <= 0 || k >= logits.size(-1)) return std::nullopt;
  auto [top, idx] = logits.topk(k + 1, -1);  // descending
  if ((top.select(-1, k - 1) == top.select(-1, k)).any().item<bool>()) return std::nullopt;
  Kept f{top.narrow(-1, 0, k).flip(-1).to(at::kFloat), idx.narrow(-1, 0, k).flip(-1), {}};
  if (p < 1.0) {
    f.keep = f.vals.softmax(-1).cumsum(-1) > (1.0 - p);
    f.keep.select(-1, k - 1).fill_(true);
  } else {
    f.keep = at::ones_like(f.vals, at::kBool);
  }
  return f;
}

// The kept values with -inf where the top-p cut drops them.
inline at::Tensor kept_logits(const Kept& f) {
  return f.vals.masked_fill(f.keep.logical_not(), -std::numeric_limits<double>::infinity());
}

// (n, Vl) rows of all tokens for this rank's vocab slice -> (n/W, V): all vocab for this
// rank's n/W tokens (rows [rank*n/W, (rank+1)*n/W)).
inline at::Tensor vocab_to_seq(pkb::Comm& comm, const at::Tensor& x) {
  int64_t w = comm.size(), nl = x.size(0) / w, vl = x.size(1);
  at::Tensor recv = at::empty_like(x);
  comm.all_to_all(recv, x.contiguous());
  return recv.view({w, nl, vl}).permute({1, 0, 2}).reshape({nl, w * vl});
}

// The inverse's exchange: rows already in its order, (W*nl, Vl), block p of nl rows for
// rank p; the result (W*nl, Vl) for this rank's vocab slice, in `into` where given
// (contiguous, of that shape).
inline at::Tensor send_to_vocab(pkb::Comm& comm, const at::Tensor& send, at::Tensor into = {}) {
  if (!into.defined()) into = at::empty_like(send);
  comm.all_to_all(into, send.contiguous());
  return into;
}

// The inverse: (nl, V) for this rank's tokens -> (W*nl, Vl) for this rank's vocab slice.
inline at::Tensor seq_to_vocab(pkb::Comm& comm, const at::Tensor& x, at::Tensor into = {}) {
  int64_t w = comm.size(), nl = x.size(0), vl = x.size(1) / w;
  return send_to_vocab(comm, x.view({nl, w, vl}).permute({1, 0, 2}).reshape({w * nl, vl}), into);
}

// Inputs like an RL rollout's: full logits sigma * randn (B*S, V) in dt, equal on every
// rank (shared stream), of which rank r keeps vocab slice r; each target token is sampled
// from its row's top-k/top-p distribution, as the sampler that produced it would have.
// Rows where the filter's outcome is fragile are drawn again: a tie across the k-th
// value or across the top-p cut, or a cumulated probability within 1e-3 of 1 - p (fp32
// summation order could flip it). So every target is kept, and any correct fp32
// implementation keeps exactly the same tokens.
inline void make_logprob_inputs(pkb::Ctx& ctx, pkb::Inputs& in, double sigma) {
  int64_t n = ctx.size("B") * ctx.size("S"), v = ctx.size("V"), vl = v / ctx.world();
  int64_t k = ctx.size("top_k");
  double p = ctx.arg_float("top_p");
  if (k <= 0 || k >= v) throw std::invalid_argument("the log-prob inputs need 0 < top_k < V");
  at::Generator& gen = ctx.shared_rng();
  at::TensorOptions f32 = ctx.options(at::kFloat);
  at::Tensor logits = at::empty({n, vl}, ctx.options());
  at::Tensor target = at::empty({n}, ctx.options(at::kLong));
  int64_t rows = std::max<int64_t>(1, (int64_t{1} << 24) / v);  // bounds the scratch memory
  for (int64_t start = 0; start < n; start += rows) {
    int64_t cnt = std::min(rows, n - start);
    at::Tensor full = at::randn({cnt, v}, gen, f32).mul_(sigma).to(ctx.dtype()).to(at::kFloat);
    at::Tensor top, top_idx, keep, probs;
    for (int attempt = 0;; ++attempt) {
      // The k+1 largest, ascending as the filter sorts; equal values by vocab index, so
      // every rank (and device) orders them alike whatever order topk returns.
      auto [vals, idx] = full.topk(k + 1, -1);
      auto [idx_sorted, by_idx] = idx.sort(-1);
      auto [asc, order] = vals.gather(-1, by_idx).sort(/*stable=*/true, -1, /*descending=*/false);
      at::Tensor asc_idx = idx_sorted.gather(-1, order);
      at::Tensor tie_k = asc.select(-1, 0) == asc.select(-1, 1);
      top = asc.narrow(-1, 1, k);
      top_idx = asc_idx.narrow(-1, 1, k);
      probs = top.softmax(-1);
      at::Tensor cum = probs.cumsum(-1);
      keep = cum > (1.0 - p);
      keep.select(-1, k - 1).fill_(true);
      at::Tensor near = std::get<0>((cum - (1.0 - p)).abs().min(-1)) < 1e-3;
      at::Tensor first = keep.logical_not().sum(-1, /*keepdim=*/true);  // first kept position
      at::Tensor below = (first - 1).clamp_min(0);
      at::Tensor tie_p = (first > 0).squeeze(-1).logical_and(
          (top.gather(-1, first) == top.gather(-1, below)).squeeze(-1));
      at::Tensor bad = tie_k.logical_or(near).logical_or(tie_p).nonzero().squeeze(-1);
      if (bad.numel() == 0) break;
      if (attempt == 100) throw std::runtime_error("make_logprob_inputs: rows stay fragile");
      full.index_copy_(0, bad, at::randn({bad.numel(), v}, gen, f32).mul_(sigma).to(ctx.dtype()).to(at::kFloat));
    }
    at::Tensor cdf = (probs * keep).cumsum(-1);
    at::Tensor u = at::rand({cnt, 1}, gen, f32) * cdf.narrow(-1, k - 1, 1);
    at::Tensor pick = (cdf <= u).sum(-1, /*keepdim=*/true).clamp_max(k - 1);
    // cdf <= u can only count dropped positions (cdf 0) and kept ones below u.
    target.narrow(0, start, cnt).copy_(top_idx.gather(-1, pick).squeeze(-1));
    logits.narrow(0, start, cnt).copy_(full.narrow(1, ctx.rank() * vl, vl));
  }
  in["logits"] = logits.view(in["logits"].sizes());
  in["target"] = target.view(in["target"].sizes());
}

// Log-probs (fp32) of this chunk's targets under the filtered distribution: a2a to
// sequence-parallel, filter, log-softmax, gather the own tokens', all-gather (into `into`
// where given: contiguous, one per target).
inline at::Tensor chunk_logprobs(pkb::Ctx& ctx, const at::Tensor& logits, const at::Tensor& target,
                                 at::Tensor into = {}) {
  int64_t nl = logits.size(0) / ctx.world();
  at::Tensor seq = vocab_to_seq(ctx.comm(), logits);  // in dt: fp32 only where the filter needs it
  at::Tensor own = target.narrow(0, ctx.rank() * nl, nl).unsqueeze(-1);
  at::Tensor lp;
  if (auto f = top_k_top_p_kept(seq, ctx.size("top_k"), ctx.arg_float("top_p"))) {
    // log_softmax of the filtered row at the target: its logit less the log-sum-exp of the
    // kept ones, -inf when the filter dropped it.
    at::Tensor hit = f->idx.eq(own).logical_and_(f->keep).any(-1);
    at::Tensor lse = kept_logits(*f).logsumexp(-1);
    lp = (seq.gather(-1, own).squeeze(-1).to(at::kFloat) - lse)
             .masked_fill_(hit.logical_not(), -std::numeric_limits<double>::infinity());
  } else {
    at::Tensor filtered = top_k_top_p(seq.to(at::kFloat), ctx.size("top_k"), ctx.arg_float("top_p")).first;
    lp = filtered.log_softmax(-1).gather(-1, own).squeeze(-1).contiguous();
  }
  if (!into.defined()) return ctx.comm().all_gather(lp.contiguous());
  ctx.comm().all_gather(into, lp.contiguous());
  return into;
}

}  // namespace pkb_tp
