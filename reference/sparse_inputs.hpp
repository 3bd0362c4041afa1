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

}  // namespace pkb_sparse
