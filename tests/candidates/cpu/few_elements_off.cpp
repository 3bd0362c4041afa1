// BAD CANDIDATE for coll_allreduce (CPU device), a pkb test.
// Expected verdict: wrong
//
// What is wrong: rank 0 adds 1 to two elements of its answer. Wrong under coll_allreduce's
// spec; correct, with the two elements reported, under a spec whose output allows a
// mismatch fraction (tests/runtime/eval_test.cpp, Eval.MismatchAllowanceIsReported).
//
// Otherwise a plain one-shot all-reduce (bf16 only): after a barrier every rank sums every
// rank's x into its own y, then a second barrier.
#include <stdint.h>

#include "pkb/host.hpp"
#include "pkb/solution.h"

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) {
    ctx->set_error(ctx, "bf16 and up to 64 ranks only");
    return 1;
  }
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  uint16_t* y = static_cast<uint16_t*>(out[0].data);
  const uint16_t* x[64];
  for (int p = 0; p < ctx->world; ++p) x[p] = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, in[0].data, p));
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int p = 0; p < ctx->world; ++p) acc += pkb::host::bf16_to_float(x[p][i]);
    if (ctx->rank == 0 && i < 2) acc += 1.f;
    y[i] = pkb::host::float_to_bf16(acc);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  return 0;
}
