// BAD CANDIDATE for coll_allreduce (CPU device), a pkb test.
// Expected verdict: correct (and no speedup it did not earn)
//
// What is wrong: every call is an honest all-reduce, but once it has been called 18 times
// (with -n 3 --warmup 5 --iters 10: its trials, warm-up and timed calls) it starts four
// host threads that spin for as long as its process lives. Where
// the reference was timed in the candidate's process after the candidate's timed calls,
// the reference ran on starved cores and the candidate's speedup grew by that much. pkb
// times the reference in blocks between the candidate's, so the threads slow both sides
// alike, and holds it to its baseline, timed before the candidate was loaded.
#include <stdint.h>

#include <atomic>
#include <thread>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

std::atomic<bool> stop{false};
int calls = 0;

void sabotage() {
  for (int i = 0; i < 4; ++i)
    std::thread([] {
      volatile uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x * 6364136223846793005ULL + 1;
    }).detach();
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
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
  if (++calls == 18) sabotage();
  return 0;
}
