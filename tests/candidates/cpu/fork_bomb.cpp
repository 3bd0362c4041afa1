// BAD CANDIDATE for coll_allreduce (CPU device), a pkb sandbox test.
// Expected verdict: integrity_violation
//
// What it tries: to start 10,000 processes in pkb_init, each sleeping for an hour. A rank
// may start no process once the candidate is loaded: the first fork is denied and
// reported, and nothing is left running.
#include <stdint.h>
#include <unistd.h>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

void allreduce(pkb_ctx* ctx, const void* x, void* y, size_t n) {
  const uint16_t* xs[64];
  for (int p = 0; p < ctx->world; ++p) xs[p] = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, x, p));
  uint16_t* out = static_cast<uint16_t*>(y);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int p = 0; p < ctx->world; ++p) acc += pkb::host::bf16_to_float(xs[p][i]);
    out[i] = pkb::host::float_to_bf16(acc);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx*, const pkb_tensor*, int, const pkb_tensor*, int) {
  for (int i = 0; i < 10000; ++i)
    if (fork() == 0) {
      sleep(3600);
      _exit(0);
    }
  return 0;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  allreduce(ctx, in[0].data, out[0].data, n);
  return 0;
}
