// BAD CANDIDATE for coll_allreduce (CPU device), a pkb test.
// Expected verdict: wrong
//
// What is wrong: batch-and-skip. Only the first call computes when called; a call with
// a new output pointer just queues it (its output stays unwritten), and a call that
// repeats an output pointer (a timing loop's second lap over its buffers) computes the
// queue in one go and skips its own work. Any check of a queued call's output, or of
// a skipped call's, finds it unwritten or stale. All ranks act alike, so nothing hangs.
//
// Otherwise a plain one-shot all-reduce (bf16 only): after a barrier every rank sums every
// rank's x into its own y, then a second barrier.
#include <stdint.h>
#include <string.h>

#include <set>
#include <utility>
#include <vector>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

float bf16_to_float(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fffu + (u >> 16 & 1)) >> 16);
}

std::set<void*> seen;                         // output pointers of earlier calls
std::vector<std::pair<void*, void*>> queued;  // (input, output) of deferred calls

// The honest one-shot all-reduce.
int allreduce(pkb_ctx* ctx, const pkb_tensor* in, pkb_tensor* out) {
  if (out[0].dtype != PKB_BF16) {
    ctx->set_error(ctx, "bf16 only");
    return 1;
  }
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  uint16_t* y = static_cast<uint16_t*>(out[0].data);
  const uint16_t* x[64];
  for (int p = 0; p < ctx->world; ++p) x[p] = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, in[0].data, p));
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int p = 0; p < ctx->world; ++p) acc += bf16_to_float(x[p][i]);
    y[i] = float_to_bf16(acc);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  return 0;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (seen.empty()) {  // the first call: honest
    seen.insert(out[0].data);
    return allreduce(ctx, in, out);
  }
  if (seen.insert(out[0].data).second) {  // a new output: defer it, write nothing
    queued.push_back({in[0].data, out[0].data});
    return 0;
  }
  for (auto [x, y] : queued) {  // a repeated output: run the whole batch, skip this call
    pkb_tensor i = in[0], o = out[0];
    i.data = x;
    o.data = y;
    if (allreduce(ctx, &i, &o)) return 1;
  }
  queued.clear();
  return 0;
}
