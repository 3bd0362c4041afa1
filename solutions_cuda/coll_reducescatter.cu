// coll_reducescatter on CUDA, no NCCL: x is (W*M, N) on every rank; rank r's y = rows
// [r*M, (r+1)*M) of the sum over ranks of x.
//
// Algorithm (one pass): rank r's kernel loads its block of rows from every rank's input
// straight from the symmetric heap (NVLink P2P loads), sums in fp32, rounds once, and
// stores into its own output. Each rank receives W-1 blocks, the reduce-scatter minimum.
//
// A call is barrier, kernel, barrier, all on ctx->stream. After the first barrier every
// rank's input is ready and its output may be written; after the second nobody reads my
// input or writes my output any more, so pkb may refill them. The barrier is a one-block
// kernel on channel 0 of the signal pads, so the data kernel never spins and may use any
// number of blocks (also when several ranks share a GPU).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;    // our barrier's signal-pad channel (pkb keeps the last one)
constexpr int kMaxWorld = 64;  // peer pointer tables travel as kernel parameters
constexpr int kThreads = 512;

using pkb::dev::from_float;
using pkb::dev::Pack;
using pkb::dev::to_float;

// What one launch reads (summed) and writes (the same sum to each), as this rank addresses it.
template <class T>
struct Ptrs {
  const T* src[kMaxWorld];
  T* dst[kMaxWorld];
};

// For i in [begin, end): every dst[d][i] = the fp32 sum over s of src[s][i], rounded once.
// With `vectorise` (every pointer 16-byte aligned, begin a whole number of packs) loads and
// stores are 16 bytes wide; what is left over goes element by element.
template <class T>
__global__ void reduce_kernel(Ptrs<T> p, int n_src, int n_dst, size_t begin, size_t end, bool vectorise) {
  constexpr int kPack = 16 / sizeof(T);
  size_t tid = blockIdx.x * size_t(blockDim.x) + threadIdx.x, stride = size_t(gridDim.x) * blockDim.x;
  size_t packs = vectorise ? (end - begin) / kPack : 0;
  for (size_t v = tid; v < packs; v += stride) {
    size_t i = begin + v * kPack;
    float acc[kPack] = {};
    for (int s = 0; s < n_src; ++s) {
      Pack<T> in = *reinterpret_cast<const Pack<T>*>(p.src[s] + i);
#pragma unroll
      for (int k = 0; k < kPack; ++k) acc[k] += to_float(in.v[k]);
    }
    Pack<T> sum;
#pragma unroll
    for (int k = 0; k < kPack; ++k) sum.v[k] = from_float<T>(acc[k]);
    for (int d = 0; d < n_dst; ++d) *reinterpret_cast<Pack<T>*>(p.dst[d] + i) = sum;
  }
  for (size_t i = begin + packs * kPack + tid; i < end; i += stride) {
    float acc = 0.f;
    for (int s = 0; s < n_src; ++s) acc += to_float(p.src[s][i]);
    T sum = from_float<T>(acc);
    for (int d = 0; d < n_dst; ++d) p.dst[d][i] = sum;
  }
}

size_t numel(const pkb_tensor& t) {
  size_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= size_t(t.sizes[d]);
  return n;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// y = the sum over ranks of block `rank` (n elements) of x.
template <class T>
void reduce_scatter(pkb_ctx* ctx, const void* x, void* y, size_t n, cudaStream_t stream) {
  int rank = ctx->rank, world = ctx->world;
  Ptrs<T> p;
  p.dst[0] = static_cast<T*>(y);
  bool vectorise = aligned16(y);
  for (int r = 0; r < world; ++r) {
    p.src[r] = static_cast<const T*>(ctx->peer_ptr(ctx, x, r)) + rank * n;
    vectorise = vectorise && aligned16(p.src[r]);
  }
  int blocks = pkb::dev::blocks_for(ctx, (n * sizeof(T) + 15) / 16, kThreads);
  reduce_kernel<T><<<blocks, kThreads, 0, stream>>>(p, world, 1, 0, n, vectorise);
}

using Launch = void (*)(pkb_ctx*, const void*, void*, size_t, cudaStream_t);

Launch for_dtype(int dtype) {
  switch (dtype) {
    case PKB_BF16: return reduce_scatter<__nv_bfloat16>;
    case PKB_FP16: return reduce_scatter<__half>;
    case PKB_FP32: return reduce_scatter<float>;
    default: return nullptr;
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  Launch launch = for_dtype(out[0].dtype);
  if (!launch || ctx->world > kMaxWorld) {
    ctx->set_error(ctx, "coll_reducescatter: needs bf16, fp16 or fp32 and at most 64 ranks");
    return 1;
  }
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  pkb::dev::barrier(ctx, stream, kChannel);
  launch(ctx, in[0].data, out[0].data, numel(out[0]), stream);
  pkb::dev::barrier(ctx, stream, kChannel);
  return pkb::dev::launch_status(ctx);
}
