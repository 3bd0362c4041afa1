// coll_allreduce on CUDA, no NCCL: y = the sum over ranks of x, on every rank.
//
// Algorithm (one pass of reduce-scatter + all-gather): the tensor is cut into W contiguous
// slices and rank r owns slice r. Its kernel loads slice r of every rank's input straight
// from the symmetric heap (NVLink P2P loads), sums in fp32, rounds once, and stores the
// result into slice r of every rank's output (P2P stores). Each rank thus sends and
// receives 2(W-1)/W of the tensor, the all-reduce minimum.
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
constexpr int kGroup = 8;      // sources loaded at once

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
    // Loads of up to kGroup sources are issued before any is used: several NVLink loads in
    // flight per thread, not one at a time.
    for (int s0 = 0; s0 < n_src; s0 += kGroup) {
      Pack<T> in[kGroup];
#pragma unroll
      for (int g = 0; g < kGroup; ++g)
        if (s0 + g < n_src) in[g] = *reinterpret_cast<const Pack<T>*>(p.src[s0 + g] + i);
#pragma unroll
      for (int g = 0; g < kGroup; ++g)
        if (s0 + g < n_src)
#pragma unroll
          for (int k = 0; k < kPack; ++k) acc[k] += to_float(in[g].v[k]);
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

// Slice `rank` of y on every rank = the sum over ranks of that slice of x.
template <class T>
void allreduce(pkb_ctx* ctx, const void* x, void* y, size_t n, cudaStream_t stream) {
  constexpr size_t kPack = 16 / sizeof(T);
  int rank = ctx->rank, world = ctx->world;
  size_t slice = ((n + world - 1) / world + kPack - 1) / kPack * kPack;  // whole packs
  size_t begin = std::min(n, rank * slice), end = std::min(n, begin + slice);
  Ptrs<T> p;
  bool vectorise = true;
  for (int r = 0; r < world; ++r) {
    p.src[r] = static_cast<const T*>(ctx->peer_ptr(ctx, x, r));
    p.dst[r] = static_cast<T*>(ctx->peer_ptr(ctx, y, r));
    vectorise = vectorise && aligned16(p.src[r]) && aligned16(p.dst[r]);
  }
  int blocks = pkb::dev::blocks_for(ctx, (end - begin + kPack - 1) / kPack, kThreads);
  reduce_kernel<T><<<blocks, kThreads, 0, stream>>>(p, world, world, begin, end, vectorise);
}

using Launch = void (*)(pkb_ctx*, const void*, void*, size_t, cudaStream_t);

Launch for_dtype(int dtype) {
  switch (dtype) {
    case PKB_BF16: return allreduce<__nv_bfloat16>;
    case PKB_FP16: return allreduce<__half>;
    case PKB_FP32: return allreduce<float>;
    default: return nullptr;
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  Launch launch = for_dtype(out[0].dtype);
  if (!launch || ctx->world > kMaxWorld) {
    ctx->set_error(ctx, "coll_allreduce: needs bf16, fp16 or fp32 and at most 64 ranks");
    return 1;
  }
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  pkb::dev::barrier(ctx, stream, kChannel);
  launch(ctx, in[0].data, out[0].data, numel(out[0]), stream);
  pkb::dev::barrier(ctx, stream, kChannel);
  return pkb::dev::launch_status(ctx);
}
