// Distributed sample sort with exact rebalancing: local sort, regular samples
// (value, rank, position) from every non-empty rank, splitters from their lexicographic
// order, an all-to-all to the buckets, a merge, and an all-to-all to the exact even split.
// Origin: ParallelKernelBench 85_distributed_sample_sort.
// Deviations: skewed keys (hot values, heavy tails, per-rank centers); the number of keys
// is the input count (fixed input shapes).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "pkb/reference.hpp"

namespace {

std::vector<int64_t> host_longs(const at::Tensor& t) {
  at::Tensor c = t.to(at::kLong).cpu().contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

std::vector<int64_t> gather_sizes(pkb::Comm& comm, int64_t mine) {
  at::Tensor t = at::full({1}, mine, at::TensorOptions().dtype(at::kLong).device(comm.device()));
  return host_longs(comm.all_gather(t));
}

// All-to-all of keys with per-destination counts; returns what arrives, by source: the
// first rows of `into` where given.
at::Tensor exchange(pkb::Comm& comm, const at::Tensor& keys, const std::vector<int64_t>& send,
                    const at::Tensor& into = {}) {
  at::Tensor s = at::tensor(send, at::kLong).to(comm.device());
  at::Tensor r = at::zeros_like(s);
  comm.all_to_all(r, s);
  std::vector<int64_t> recv = host_longs(r);
  int64_t total = 0;
  for (int64_t x : recv) total += x;
  at::Tensor out = into.defined() ? into.narrow(0, 0, total) : at::zeros({total}, keys.options());
  comm.all_to_all(out, keys, recv, send);
  return out;
}

struct SampleSort : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t n = ctx.size("n"), hot = ctx.arg_int("hot_values");
    at::TensorOptions f32 = ctx.options(at::kFloat);
    at::Generator& mine = ctx.rng();
    at::Generator& shared = ctx.shared_rng();
    at::Tensor hot_keys = at::rand({hot}, shared, f32) * 1000 - 500;
    at::Tensor centers = at::rand({ctx.world()}, shared, f32) * 2000 - 1000;
    bool empty_odd = at::rand({1}, shared, f32).item<float>() < 0.25f;
    // hot keys by a Zipf law over the 16 (rank k with weight 1 / (k + 1))
    at::Tensor weights = at::arange(1, hot + 1, f32).reciprocal();
    at::Tensor pick = at::multinomial(weights, n, /*replacement=*/true, mine);
    at::Tensor z = at::randn({n}, mine, f32), u = at::rand({n}, mine, f32);
    at::Tensor spread = centers[ctx.rank()] + 50 * z / (u + 0.01).sqrt();
    at::Tensor is_hot = at::rand({n}, mine, f32) < ctx.arg_float("hot_fraction");
    in["values"] = at::where(is_hot, hot_keys.index_select(0, pick), spread).to(ctx.dtype());
    int64_t count = n - at::randint(0, n / 4 + 1, {1}, mine, ctx.options(at::kLong)).item<int64_t>();
    if (empty_odd && ctx.rank() % 2 == 1) count = 0;
    in["count"] = at::full({}, count, ctx.options(at::kLong));
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    int64_t w = ctx.world(), r = ctx.rank();
    int64_t count = in["count"].item<int64_t>();
    at::Tensor local = std::get<0>(in["values"].narrow(0, 0, count).sort());

    // Samples: every non-empty rank gives A regularly spaced (value, rank, position).
    std::vector<int64_t> sizes = gather_sizes(comm, count);
    std::vector<int64_t> active;
    for (int64_t s = 0; s < w; ++s)
      if (sizes[s] > 0) active.push_back(s);
    int64_t a = int64_t(active.size());
    if (a == 0) {  // no keys anywhere
      out.set_size(0, 0, 0);
      return;
    }
    int64_t me = std::find(active.begin(), active.end(), r) - active.begin();
    if (me == a) me = -1;
    at::TensorOptions f64 = ctx.options(at::kDouble);
    at::Tensor sample = at::full({a, 3}, -1.0, f64);
    sample.select(1, 0).fill_(std::numeric_limits<double>::infinity());
    if (me >= 0) {
      int64_t valid = std::min(a, count);
      at::Tensor i = at::arange(valid, ctx.options(at::kLong));
      at::Tensor pos = a < count ? at::div((i + 1) * count, a, "floor") - 1 : i;
      sample.narrow(0, 0, valid).select(1, 0).copy_(local.index_select(0, pos).to(at::kDouble));
      sample.narrow(0, 0, valid).select(1, 1).fill_(double(me));
      sample.narrow(0, 0, valid).select(1, 2).copy_(pos.to(at::kDouble));
    }
    at::Tensor all = comm.all_gather(sample).cpu();
    std::vector<std::tuple<double, int64_t, int64_t>> triples;
    auto acc = all.accessor<double, 2>();
    for (int64_t k = 0; k < all.size(0); ++k)
      if (acc[k][1] >= 0) triples.emplace_back(acc[k][0], int64_t(acc[k][1]), int64_t(acc[k][2]));
    std::sort(triples.begin(), triples.end());
    int64_t usable = int64_t(triples.size());

    // Bucket boundaries in the local keys: a splitter from a lower rank takes equal keys
    // to the next bucket, from a higher rank keeps them, its own rank cuts at its position.
    std::vector<int64_t> bounds = {0};
    at::Tensor keys64 = local.to(at::kDouble);
    for (int64_t b = 0; b + 1 < a; ++b) {
      int64_t end = 0;
      if (me >= 0 && usable > 0) {
        auto [value, srank, spos] = triples[std::clamp((b + 1) * usable / a - 1, int64_t(0), usable - 1)];
        at::Tensor probe = at::full({1}, value, keys64.options());
        if (me > srank) end = at::searchsorted(keys64, probe, false, false).item<int64_t>();
        else if (me < srank) end = at::searchsorted(keys64, probe, false, true).item<int64_t>();
        else end = spos + 1;
      }
      bounds.push_back(std::max(bounds.back(), std::min(end, count)));
    }
    bounds.push_back(count);
    std::vector<int64_t> send(w, 0);
    if (me >= 0)
      for (int64_t b = 0; b < a; ++b) send[active[b]] = bounds[b + 1] - bounds[b];
    at::Tensor merged = std::get<0>(exchange(comm, local, send).sort());

    // Exact rebalancing: rank d gets sorted elements [d*base + min(d, extra), ...).
    std::vector<int64_t> held = gather_sizes(comm, merged.numel());
    int64_t total = 0, start = 0;
    for (int64_t s = 0; s < w; ++s) total += held[s];
    for (int64_t s = 0; s < r; ++s) start += held[s];
    int64_t end = start + merged.numel(), base = total / w, extra = total % w;
    std::vector<int64_t> res(w, 0);
    for (int64_t d = 0; d < w; ++d) {
      int64_t lo = d * base + std::min(d, extra), hi = lo + base + (d < extra ? 1 : 0);
      res[d] = std::max<int64_t>(0, std::min(end, hi) - std::max(start, lo));
    }
    out.set_size(0, 0, exchange(comm, merged, res, out["sorted"]).size(0));
  }
};

}  // namespace

PKB_REFERENCE("misc_sample_sort", SampleSort);
