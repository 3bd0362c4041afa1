// An honest candidate for coll_allreduce (CPU device), a pkb test: run on
// test_roofline_lie, whose roofline no correct candidate can meet.
// Expected verdict: integrity_violation (faster than the roofline bound)
//
// A plain one-shot all-reduce (bf16 only): barrier, every rank sums every rank's x into
// its own y, barrier.
#include <stdint.h>

#include "pkb/host.hpp"
#include "pkb/solution.h"

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
  return 0;
}
