// BAD CANDIDATE for coll_allreduce (CPU device), a pkb test.
// Expected verdict: timeout
//
// What is wrong: its own barrier waits for every peer's signal before sending its
// own; nobody ever sends, so every rank spins forever.
//
// Otherwise a plain one-shot all-reduce (bf16 only): after a barrier every rank sums every
// rank's x into its own y, then a second barrier.
#include <stdint.h>
#include <string.h>

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

// A hand-rolled barrier with its two halves swapped: every rank waits for its peers'
// signals before sending its own, so every rank waits forever.
void barrier(pkb_ctx* ctx) {
  for (int p = 0; p < ctx->world; ++p) pkb::host::wait_signal(ctx->pads[ctx->rank], pkb::host::slot(0, p, ctx->world));
  for (int p = 0; p < ctx->world; ++p) pkb::host::put_signal(ctx->pads[p], pkb::host::slot(0, ctx->rank, ctx->world));
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16) {
    ctx->set_error(ctx, "bf16 only");
    return 1;
  }
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  uint16_t* y = static_cast<uint16_t*>(out[0].data);
  const uint16_t* x[64];
  for (int p = 0; p < ctx->world; ++p) x[p] = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, in[0].data, p));
  barrier(ctx);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int p = 0; p < ctx->world; ++p) acc += bf16_to_float(x[p][i]);
    y[i] = float_to_bf16(acc);
  }
  barrier(ctx);
  return 0;
}
