// pkb selftest on one rank: the communicator, every peer's heap region as this rank maps
// it, and how long a barrier through the signal pads takes.
#include <ATen/ATen.h>

#include <chrono>

#include "device/device.hpp"
#include "jobs/jobs.hpp"
#include "tensor/init.hpp"

namespace pkb::jobs {

using json = nlohmann::json;

json run_selftest(rank::Rank& r) {
  json out;
  at::Tensor x = at::full({4}, r.rank + 1, at::TensorOptions().device(r.device).dtype(at::kFloat));
  r.comm->all_reduce(x);
  double want = r.world * (r.world + 1) / 2.0;
  out["allreduce_ok"] = x.cpu().eq(want).all().item<bool>();

  heap::Heap& h = *r.heap;
  size_t off = h.allocate(sizeof(int64_t) * 2);
  auto slot = [&](int p) { return tensor::view_of(static_cast<char*>(h.base(p)) + off, {2}, at::kLong, r.device); };
  slot(r.rank).copy_(at::tensor({int64_t{r.rank}, int64_t{1000 + r.rank}}, at::kLong));
  device::synchronize(r.device);
  r.client.barrier(r.world);
  bool peers_ok = true;
  for (int p = 0; p < r.world; ++p) {
    at::Tensor v = slot(p).cpu();
    peers_ok = peers_ok && v[0].item<int64_t>() == p && v[1].item<int64_t>() == 1000 + p;
  }
  out["heap_peers_ok"] = peers_ok;

  int iters = r.job.barrier_iters;
  for (int i = 0; i < 50; ++i) device::heap_barrier(h, 0);
  device::synchronize(r.device);
  r.client.barrier(r.world);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) device::heap_barrier(h, 0);
  device::synchronize(r.device);
  out["barrier_us"] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
  out["barrier_iters"] = iters;
  return out;
}

}  // namespace pkb::jobs
