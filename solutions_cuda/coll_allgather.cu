// coll_allgather on CUDA, no NCCL: y[p] = rank p's x, on every rank; y is (W, M, N).
//
// Algorithm: one kernel on each rank pulls every rank's input straight from the symmetric
// heap (NVLink P2P loads) into its slot of y, one grid row (blockIdx.y) per source. Each
// rank receives W-1 inputs, the all-gather minimum. Copies are bytes, so any dtype works.
//
// A call is barrier, copy kernel, barrier, all on ctx->stream. After the first barrier
// every rank's input is ready and its output may be written; after the second nobody reads
// my input or writes my output any more, so pkb may refill them. The barrier is a
// one-block kernel on channel 0 of the signal pads, so the copy kernel never spins and may
// use any number of blocks (also when several ranks share a GPU).
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;    // our barrier's signal-pad channel (pkb keeps the last one)
constexpr int kMaxWorld = 64;  // peer pointer tables travel as kernel parameters
constexpr int kThreads = 512;

size_t nbytes(const pkb_tensor& t) {
  size_t n = pkb_dtype_size(t.dtype);
  for (int d = 0; d < t.ndim; ++d) n *= size_t(t.sizes[d]);
  return n;
}

// Copies of the same length, as this rank addresses their ends; blockIdx.y picks one.
struct Copies {
  const char* src[kMaxWorld];
  char* dst[kMaxWorld];
};

// 16-byte loads and stores when both ends are 16-byte aligned; the rest byte by byte.
__global__ void copy_kernel(Copies c, size_t bytes) {
  const char* src = c.src[blockIdx.y];
  char* dst = c.dst[blockIdx.y];
  size_t tid = blockIdx.x * size_t(blockDim.x) + threadIdx.x, stride = size_t(gridDim.x) * blockDim.x;
  size_t packs = (reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) % 16 == 0 ? bytes / 16 : 0;
  for (size_t v = tid; v < packs; v += stride)
    reinterpret_cast<uint4*>(dst)[v] = reinterpret_cast<const uint4*>(src)[v];
  for (size_t i = packs * 16 + tid; i < bytes; i += stride) dst[i] = src[i];
}

void copy(pkb_ctx* ctx, const Copies& c, int n, size_t bytes, cudaStream_t stream) {
  dim3 grid(pkb::dev::blocks_for(ctx, (bytes + 15) / 16, kThreads, n), n);
  copy_kernel<<<grid, kThreads, 0, stream>>>(c, bytes);
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (!pkb_dtype_size(in[0].dtype) || ctx->world > kMaxWorld) {
    ctx->set_error(ctx, "coll_allgather: unknown dtype, or more than 64 ranks");
    return 1;
  }
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  size_t bytes = nbytes(in[0]);
  Copies c;
  for (int p = 0; p < ctx->world; ++p) {
    c.src[p] = static_cast<const char*>(ctx->peer_ptr(ctx, in[0].data, p));
    c.dst[p] = static_cast<char*>(out[0].data) + p * bytes;
  }
  pkb::dev::barrier(ctx, stream, kChannel);
  copy(ctx, c, ctx->world, bytes, stream);
  pkb::dev::barrier(ctx, stream, kChannel);
  return pkb::dev::launch_status(ctx);
}
