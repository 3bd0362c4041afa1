// coll_allreduce on the CPU device: y = the sum over ranks of x, on every rank.
//
// Algorithm (one pass of reduce-scatter + all-gather, the same as the CUDA version): the
// tensor is cut into W contiguous slices and rank r owns slice r. Rank r reads slice r of
// every rank's input straight from the shared-memory heap, sums in fp32, rounds once, and
// writes the result into slice r of every rank's output.
//
// A call is bracketed by two barriers on channel 0 of the signal pads (pkb keeps the last
// channel for itself). After the first, every rank's input is ready and its output may be
// written; after the second, nobody reads my input or writes my output any more.
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;

// bf16 is the top half of an fp32; fp16 is the compiler's _Float16.
struct bf16 {
  uint16_t bits;
};

float to_float(float v) { return v; }
float to_float(_Float16 v) { return v; }
float to_float(bf16 v) {
  uint32_t u = uint32_t(v.bits) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

template <class T>
T from_float(float f) {
  return T(f);
}
template <>
bf16 from_float<bf16>(float f) {  // round to nearest even
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t(u >> 16 | 0x40)};  // NaN stays NaN
  return {uint16_t((u + 0x7fffu + (u >> 16 & 1)) >> 16)};
}

size_t numel(const pkb_tensor& t) {
  size_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= size_t(t.sizes[d]);
  return n;
}

// Slice `rank` of y on every rank = the sum over ranks of that slice of x.
template <class T>
void allreduce(pkb_ctx* ctx, const void* x, void* y, size_t n) {
  int rank = ctx->rank, world = ctx->world;
  size_t slice = (n + world - 1) / world;
  size_t begin = std::min(n, rank * slice), end = std::min(n, begin + slice);
  std::vector<const T*> xs(world);
  std::vector<T*> ys(world);
  for (int p = 0; p < world; ++p) {
    xs[p] = static_cast<const T*>(ctx->peer_ptr(ctx, x, p));
    ys[p] = static_cast<T*>(ctx->peer_ptr(ctx, y, p));
  }
  for (size_t i = begin; i < end; ++i) {
    float acc = 0.f;
    for (int p = 0; p < world; ++p) acc += to_float(xs[p][i]);
    T sum = from_float<T>(acc);
    for (int p = 0; p < world; ++p) ys[p][i] = sum;
  }
}

using Kernel = void (*)(pkb_ctx*, const void*, void*, size_t);

Kernel for_dtype(int dtype) {
  switch (dtype) {
    case PKB_BF16: return allreduce<bf16>;
    case PKB_FP16: return allreduce<_Float16>;
    case PKB_FP32: return allreduce<float>;
    default: return nullptr;
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  Kernel kernel = for_dtype(out[0].dtype);
  if (!kernel) {
    ctx->set_error(ctx, "coll_allreduce: dtype must be bf16, fp16 or fp32");
    return 1;
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  kernel(ctx, in[0].data, out[0].data, numel(out[0]));
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  return 0;
}
