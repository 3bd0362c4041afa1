// coll_broadcast on CUDA, no NCCL: y = the root's x, on every rank.
//
// Algorithm (relay): the tensor is cut into W contiguous slices and rank r relays slice r.
// Its kernel loads the slice once from the root's input (NVLink P2P loads) and stores it
// into every rank's output (P2P stores). The root's links carry about 2x the tensor, not
// the (W-1)x of every rank pulling all of it from the root. Copies are bytes, so any dtype
// works.
//
// A call is barrier, relay kernel, barrier, all on ctx->stream. After the first barrier
// every rank's input is ready and its output may be written; after the second nobody reads
// my input or writes my output any more, so pkb may refill them. The barrier is a
// one-block kernel on channel 0 of the signal pads, so the relay kernel never spins and may
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

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Every rank's y, as this rank addresses it.
struct Outputs {
  char* dst[kMaxWorld];
};

// Bytes [begin, end) of src into every dst: each 16-byte pack is loaded once and stored
// n_dst times. With `vectorise` (every pointer 16-byte aligned, begin a multiple of 16)
// loads and stores are 16 bytes wide; what is left over goes byte by byte.
__global__ void relay_kernel(const char* src, Outputs o, int n_dst, size_t begin, size_t end, bool vectorise) {
  size_t tid = blockIdx.x * size_t(blockDim.x) + threadIdx.x, stride = size_t(gridDim.x) * blockDim.x;
  size_t packs = vectorise ? (end - begin) / 16 : 0;
  for (size_t v = tid; v < packs; v += stride) {
    size_t i = begin + v * 16;
    uint4 pack = *reinterpret_cast<const uint4*>(src + i);
    for (int d = 0; d < n_dst; ++d) *reinterpret_cast<uint4*>(o.dst[d] + i) = pack;
  }
  for (size_t i = begin + packs * 16 + tid; i < end; i += stride) {
    char b = src[i];
    for (int d = 0; d < n_dst; ++d) o.dst[d][i] = b;
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (!pkb_dtype_size(out[0].dtype) || ctx->world > kMaxWorld) {
    ctx->set_error(ctx, "coll_broadcast: unknown dtype, or more than 64 ranks");
    return 1;
  }
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  int rank = ctx->rank, world = ctx->world;
  int root = int(ctx->arg_int(ctx, "root", nullptr));
  size_t bytes = nbytes(out[0]);
  size_t slice = ((bytes + world - 1) / world + 15) / 16 * 16;  // whole packs
  size_t begin = std::min(bytes, rank * slice), end = std::min(bytes, begin + slice);
  const char* src = static_cast<const char*>(ctx->peer_ptr(ctx, in[0].data, root));
  Outputs o;
  bool vectorise = aligned16(src);
  for (int p = 0; p < world; ++p) {
    o.dst[p] = static_cast<char*>(ctx->peer_ptr(ctx, out[0].data, p));
    vectorise = vectorise && aligned16(o.dst[p]);
  }
  int blocks = pkb::dev::blocks_for(ctx, (end - begin + 15) / 16, kThreads);
  pkb::dev::barrier(ctx, stream, kChannel);
  relay_kernel<<<blocks, kThreads, 0, stream>>>(src, o, world, begin, end, vectorise);
  pkb::dev::barrier(ctx, stream, kChannel);
  return pkb::dev::launch_status(ctx);
}
