// A good candidate for coll_allreduce (CPU device), a pkb test of the candidate's heap:
// pkb_init reserves nearly twice the rank's inputs and outputs (1/16 short), which pkb's
// default --heap-size gives; the test runs it where that is over 256 MiB. Then the plain
// one-shot all-reduce of honest_allreduce.cpp.
// Expected verdict: correct
#include <stdint.h>

#include <string>

#include "pkb/host.hpp"
#include "pkb/solution.h"

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

static size_t bytes_of(const pkb_tensor& t) {
  size_t n = pkb_dtype_size(t.dtype);
  for (int d = 0; d < t.ndim; ++d) n *= size_t(t.sizes[d]);
  return n;
}

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int nin, pkb_tensor* out, int nout) {
  size_t io = 0;
  for (int i = 0; i < nin; ++i) io += bytes_of(in[i]);
  for (int i = 0; i < nout; ++i) io += bytes_of(out[i]);
  size_t want = 2 * io - io / 16;
  if (!ctx->symm_alloc(ctx, want)) {
    ctx->set_error(ctx, ("symm_alloc(" + std::to_string(want >> 20) + " MiB) failed").c_str());
    return 1;
  }
  return 0;
}

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
