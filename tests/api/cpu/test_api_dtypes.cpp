// test_api_dtypes on the CPU device: sums int32, complex64 and fp64 over every rank's
// input in the heap, gathers the bool and fp8 bytes, and reads the non-tensor arguments
// (op, scale, negate, weights) from ctx->args.
#include <string.h>

#include <algorithm>
#include <complex>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

const pkb_arg* find(pkb_ctx* ctx, const char* name) {
  for (int i = 0; i < ctx->n_args; ++i)
    if (!strcmp(ctx->args[i].name, name)) return &ctx->args[i];
  return nullptr;
}

template <class T>
const T* peer(pkb_ctx* ctx, const pkb_tensor& t, int s) {
  return static_cast<const T*>(ctx->peer_ptr(ctx, t.data, s));
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  const pkb_arg *op = find(ctx, "op"), *scale = find(ctx, "scale"), *negate = find(ctx, "negate"),
                *weights = find(ctx, "weights");
  if (!op || !scale || !negate || !weights || !weights->list_len) {
    ctx->set_error(ctx, "test_api_dtypes: an argument is missing");
    return 1;
  }
  bool max = !strcmp(op->s, "max");
  double factor = scale->f * (negate->i ? -1.0 : 1.0);
  int64_t m = in[0].sizes[0];
  auto* a = static_cast<int32_t*>(out[0].data);
  auto* b = static_cast<uint8_t*>(out[1].data);
  auto* c = static_cast<uint8_t*>(out[2].data);
  auto* z = static_cast<std::complex<float>*>(out[3].data);
  auto* d = static_cast<double*>(out[4].data);

  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (int64_t i = 0; i < m; ++i) {
    a[i] = 0;
    z[i] = 0;
    d[i] = 0;
    for (int s = 0; s < ctx->world; ++s) {
      a[i] += peer<int32_t>(ctx, in[0], s)[i];
      z[i] += peer<std::complex<float>>(ctx, in[3], s)[i];
      double v = peer<double>(ctx, in[4], s)[i] * double(weights->list[s % weights->list_len]);
      d[i] = s == 0 ? v : max ? std::max(d[i], v) : d[i] + v;
    }
    d[i] *= factor;
  }
  for (int s = 0; s < ctx->world; ++s) {
    memcpy(b + s * m, peer<uint8_t>(ctx, in[1], s), size_t(m));
    memcpy(c + s * m, peer<uint8_t>(ctx, in[2], s), size_t(m));
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  return 0;
}
