// sp_gather_seq_scatter_heads on CUDA, no NCCL: Ulysses' all-to-all (scatter heads, gather
// the sequence) fused with its layout change.
//
// x is rank r's (B, S, H, D) sequence shard; rank p's output y_p is (B, W*S, H/W, D) with
// y_p[b, r*S + s] = x_r[b, s, head group p]. A (b, s) row of head group p is Hl*D contiguous
// elements in x and lands as Hl*D contiguous elements in y_p, so the whole exchange is one
// kernel on each rank that reads its x once and writes every row straight into the owner's
// output through the symmetric heap (NVLink stores; 16-byte vectors when the rows allow),
// with no staging buffer and no separate permute: the layout change happens in the
// addressing. blockIdx.y picks the destination, rank+1 first, so at any time the ranks
// write to different peers. Each rank sends W-1 shares of its x (plus its own, locally),
// the all-to-all minimum.
//
// A call is barrier, push kernel, barrier, all on ctx->stream. After the first barrier
// every peer's y is ready to be written (pkb poisons it before the call); after the second
// (whose fence orders the push kernel's remote stores) every share has landed in every y
// and nobody writes my y any more. The barrier is a one-block kernel on channel 0 of the
// signal pads and nothing else ever spins. Bytes are copied, so any dtype works.
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;
constexpr int kThreads = 256;

__global__ void barrier_kernel(uint32_t* const* pads, int rank, int world) {
  pkb::dev::barrier_block(pads, rank, world, kChannel);
}

// One destination per blockIdx.y (peer rank+1+y); rows of `row` bytes: row (bi, si) of
// head group p of x goes to row (bi*W + rank)*S + si of p's y. `elem_row`: bytes of one
// head's D elements. `vec`: rows and bases are 16-byte aligned, move uint4s.
__global__ void push_kernel(const char* x, char* y, void* const* bases, int rank, int world, int64_t b, int64_t s,
                            int64_t h, int64_t hl, size_t row, size_t elem_row, bool vec) {
  const int p = (rank + 1 + blockIdx.y) % world;
  char* dst = pkb::dev::peer_ptr(y, bases, rank, p);
  const size_t unit = vec ? 16 : 1, per_row = row / unit, rows = size_t(b * s);
  const size_t total = rows * per_row;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += stride) {
    const size_t r = i / per_row, u = i % per_row;
    const int64_t bi = int64_t(r) / s, si = int64_t(r) % s;
    const char* from = x + size_t((bi * s + si) * h + int64_t(p) * hl) * elem_row + u * unit;
    char* to = dst + size_t((bi * world + rank) * s + si) * row + u * unit;
    if (vec)
      *reinterpret_cast<uint4*>(to) = *reinterpret_cast<const uint4*>(from);
    else
      *to = *from;
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  const pkb_tensor& x = in[0];
  const int rank = ctx->rank, world = ctx->world;
  const int64_t b = x.sizes[0], s = x.sizes[1], h = x.sizes[2], d = x.sizes[3];
  const size_t es = pkb_dtype_size(x.dtype);
  if (x.ndim != 4 || !es || h % world) {
    ctx->set_error(ctx, "sp_gather_seq_scatter_heads: x must be (B, S, H, D) with H % W == 0");
    return 1;
  }
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  const int64_t hl = h / world;
  const size_t row = size_t(hl * d) * es;
  const bool vec = row % 16 == 0 && reinterpret_cast<uintptr_t>(x.data) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(out[0].data) % 16 == 0;
  const size_t units = size_t(b * s) * (vec ? row / 16 : row);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device);
  const int blocks = int(std::clamp<size_t>((units + kThreads - 1) / kThreads, 1, std::max(1, 4 * sms / world)));
  const int bthreads = (world + 31) / 32 * 32;

  barrier_kernel<<<1, bthreads, 0, stream>>>(ctx->pads_dev, rank, world);
  push_kernel<<<dim3(blocks, world), kThreads, 0, stream>>>(static_cast<const char*>(x.data),
                                                            static_cast<char*>(out[0].data), ctx->heap_bases_dev, rank,
                                                            world, b, s, h, hl, row, size_t(d) * es, vec);
  barrier_kernel<<<1, bthreads, 0, stream>>>(ctx->pads_dev, rank, world);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    ctx->set_error(ctx, cudaGetErrorString(err));
    return 1;
  }
  return 0;
}
