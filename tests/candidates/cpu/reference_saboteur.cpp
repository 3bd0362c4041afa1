// BAD CANDIDATE for coll_allreduce (CPU device), a pkb test.
// Expected verdict: correct (and no more than pkb's drift allowance of speedup it did not earn)
//
// What is wrong: every call is an honest all-reduce, but from its first call on two host
// threads of its own spin whenever it is not being called, and rest while it is. pkb times
// the reference in the candidate's process, in blocks between the candidate's, so the
// threads slow down exactly the reference's calls, and would buy the candidate the
// difference. pkb credits the reference at most a little over its baseline, timed in this
// process before the candidate was loaded: the record flags reference_slowed.
#include <stdint.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

std::atomic<bool> inside{false};
bool started = false;

void spin_between_calls() {
  volatile uint64_t x = 0;
  for (;;) {
    if (inside.load(std::memory_order_relaxed)) std::this_thread::sleep_for(std::chrono::microseconds(20));
    else
      for (int i = 0; i < 4096; ++i) x = x * 6364136223846793005ULL + 1;
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  inside = true;
  if (!started) {
    started = true;
    for (int t = 0; t < 2; ++t) std::thread(spin_between_calls).detach();
  }
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  const uint16_t* xs[64];
  for (int p = 0; p < ctx->world; ++p) xs[p] = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, in[0].data, p));
  uint16_t* y = static_cast<uint16_t*>(out[0].data);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int p = 0; p < ctx->world; ++p) acc += pkb::host::bf16_to_float(xs[p][i]);
    y[i] = pkb::host::float_to_bf16(acc);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  inside = false;
  return 0;
}
