// Shared by the graph and recommendation references (gnn_*, rec_*): inputs with the
// structure of real sparse workloads (power-law popularity of rows and nodes) and the
// bookkeeping of data-dependent all-to-alls (counts, splits, inverse permutations).
#pragma once

#include <ATen/ATen.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "pkb/reference.hpp"

namespace pkb_sparse {

// n draws of popularity ranks k in [0, V) with P(k) ~ (k + 1)^-alpha (a Zipf law, through the
// inverse CDF of its continuous version on [1, V + 1)): rank 0 is the hottest. int64.
inline at::Tensor zipf_ranks(at::Generator& gen, int64_t n, int64_t v, double alpha, const at::TensorOptions& opts) {
  if (v <= 0) throw std::invalid_argument("zipf_ranks: empty range");
  at::Tensor u = at::rand({n}, gen, opts.dtype(at::kDouble));
  at::Tensor x;
  if (std::abs(alpha - 1.0) < 1e-9) {
    x = at::exp(u * std::log(double(v) + 1.0));
  } else {
    double a = 1.0 - alpha, top = std::pow(double(v) + 1.0, a) - 1.0;
    x = at::pow(u * top + 1.0, 1.0 / a);
  }
  return (x.floor() - 1.0).clamp(0, double(v - 1)).to(at::kLong);
}

// n ids in [0, V) drawn with Zipf(alpha) popularity, the popularity order being `perm` (a
// permutation of [0, V), the same on every rank when drawn from the shared stream).
inline at::Tensor zipf_ids(at::Generator& gen, int64_t n, const at::Tensor& perm, double alpha) {
  return perm.index_select(0, zipf_ranks(gen, n, perm.numel(), alpha, perm.options()));
}

// Per-destination counts of `owner` (values in [0, W)), int64 on the host.
inline std::vector<int64_t> counts_of(const at::Tensor& owner, int64_t w) {
  at::Tensor c = at::bincount(owner.to(at::kLong), {}, w).cpu();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + w);
}

inline std::vector<int64_t> to_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kLong).cpu().contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

inline int64_t sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

// The counts every peer sends me, from the counts I send every peer (an all_to_all of W
// int64s). Under the no-communication stand-in, peers' counts read 0.
inline std::vector<int64_t> exchange_counts(pkb::Comm& comm, const std::vector<int64_t>& send) {
  at::Tensor s = at::tensor(send, at::kLong).to(comm.device());
  at::Tensor r = at::zeros_like(s);
  comm.all_to_all(r, s);
  return to_vector(r);
}

// An all_to_all of rows with uneven splits into `into` (sum(recv) contiguous rows).
inline void all_to_all_rows_into(pkb::Comm& comm, at::Tensor& into, const at::Tensor& in,
                                 const std::vector<int64_t>& send, const std::vector<int64_t>& recv) {
  comm.all_to_all(into, in.contiguous(), recv, send);
}

// An all_to_all of rows with uneven splits into a fresh tensor.
inline at::Tensor all_to_all_rows(pkb::Comm& comm, const at::Tensor& in, const std::vector<int64_t>& send,
                                  const std::vector<int64_t>& recv) {
  std::vector<int64_t> shape = in.sizes().vec();
  shape[0] = sum(recv);
  at::Tensor out = at::zeros(shape, in.options());
  comm.all_to_all(out, in.contiguous(), recv, send);
  return out;
}

// For each of the counts[i] consecutive elements of segment i: the index i (as
// repeat_interleave) and the position inside the segment. int64, on counts' device.
inline std::pair<at::Tensor, at::Tensor> segments(const at::Tensor& counts) {
  at::Tensor c = counts.to(at::kLong);
  at::Tensor seg = at::repeat_interleave(c);
  at::Tensor start = c.cumsum(0) - c;
  at::Tensor pos = at::arange(seg.numel(), c.options()) - start.index_select(0, seg);
  return {seg, pos};
}

// GraphBolt's cooperative exchange counts, (W, W) int64 on the host, equal on every rank
// (drawn from the shared stream): counts[i][j] = rows rank j sends to rank i =
// p + q [P[i] == j] - q [P[(i+1) % W] == j], q = p // 2, P a random permutation. Every row
// and column sums to pW.
inline at::Tensor cooperative_counts(pkb::Ctx& ctx, int64_t p) {
  int64_t w = ctx.world(), q = p / 2;
  at::Tensor perm = at::randperm(w, ctx.shared_rng(), ctx.options(at::kLong)).cpu();
  at::Tensor c = at::full({w, w}, p, at::kLong);
  auto pa = perm.accessor<int64_t, 1>();
  auto ca = c.accessor<int64_t, 2>();
  for (int64_t i = 0; i < w; ++i) {
    ca[i][pa[i]] += q;
    ca[i][pa[(i + 1) % w]] -= q;
  }
  return c;
}

// The rotated all_to_all of GraphBolt: group c of `in` (sizes send[c]) goes to rank
// (r + c) mod W, group c of the result (sizes recv[c]) comes from rank (r + c) mod W.
// The result goes into `into` where given.
inline at::Tensor rotated_all_to_all(pkb::Comm& comm, const at::Tensor& in, const std::vector<int64_t>& send,
                                     const std::vector<int64_t>& recv, at::Tensor into = {}) {
  int64_t w = comm.size(), r = comm.rank();
  std::vector<int64_t> off(w + 1, 0);
  for (int64_t c = 0; c < w; ++c) off[c + 1] = off[c] + send[c];
  std::vector<at::Tensor> by_dest;
  std::vector<int64_t> in_splits, out_splits;
  for (int64_t d = 0; d < w; ++d) {
    int64_t c = ((d - r) % w + w) % w;  // the group for rank d
    by_dest.push_back(in.narrow(0, off[c], send[c]));
    in_splits.push_back(send[c]);
    out_splits.push_back(recv[c]);  // rank d's group arrives as my group c
  }
  at::Tensor got = all_to_all_rows(comm, at::cat(by_dest), in_splits, out_splits);
  std::vector<int64_t> got_off(w + 1, 0);
  for (int64_t s = 0; s < w; ++s) got_off[s + 1] = got_off[s] + out_splits[s];
  std::vector<at::Tensor> by_group;
  for (int64_t c = 0; c < w; ++c) {
    int64_t s = (r + c) % w;
    by_group.push_back(got.narrow(0, got_off[s], out_splits[s]));
  }
  return into.defined() ? at::cat_out(into, by_group) : at::cat(by_group);
}

// Rank r's counts in rotated order: what it receives from rank r + c (counts[r][r+c]) and
// what it sends there (counts[r+c][r]).
inline std::pair<std::vector<int64_t>, std::vector<int64_t>> rotated_counts(const at::Tensor& counts, int64_t r) {
  int64_t w = counts.size(0);
  at::Tensor c = counts.cpu().contiguous();
  auto a = c.accessor<int64_t, 2>();
  std::vector<int64_t> from(w), to(w);
  for (int64_t k = 0; k < w; ++k) {
    from[k] = a[r][(r + k) % w];
    to[k] = a[(r + k) % w][r];
  }
  return {from, to};
}

}  // namespace pkb_sparse
