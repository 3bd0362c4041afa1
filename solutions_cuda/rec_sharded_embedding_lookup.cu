// rec_sharded_embedding_lookup on CUDA, no NCCL: rank r holds rows [r*M, (r+1)*M) of a
// W*M-row table and L indices into the whole table; it returns their rows in index order.
//
// Algorithm: no all-to-all of indices and rows at all. Every rank's table lives in the
// symmetric heap, so one gather kernel serves each lookup straight from its owner's table:
// the thread for (lookup i, 16-byte piece j) reads index i, finds the owner (idx / M) and
// loads piece j of that row through the owner's peer pointer (an NVLink load when the row
// is remote, a local load otherwise), storing it into row i of the output. The reference
// moves every index and every row twice through NCCL (plus two host syncs for the splits);
// here each remote row crosses NVLink once and nothing waits on the host.
//
// A call is barrier, gather, barrier, all on ctx->stream. After the first barrier every
// rank's table is ready (pkb fills inputs before the call); after the second nobody reads
// my table any more, so pkb may refill it. The barrier is a one-block kernel on channel 0
// of the signal pads, so the gather kernel never spins (ranks sharing a GPU make progress).
// Rows are copied as bytes, so any dtype works; 16-byte pieces when every row is 16-byte
// aligned, bytes otherwise.
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;    // our barrier's signal-pad channel (pkb keeps the last one)
constexpr int kMaxWorld = 64;  // peer pointer tables travel as kernel parameters
constexpr int kThreads = 256;

struct Tables {
  const char* base[kMaxWorld];  // every rank's table, as this rank addresses it
};

// The rank owning global row `id` (clamped, so a bad index cannot leave the tables).
__device__ __forceinline__ int owner_of(int64_t id, int64_t rows_per_rank, int world) {
  int64_t o = id / rows_per_rank;
  return int(o < 0 ? 0 : (o >= world ? world - 1 : o));
}

__global__ void barrier_kernel(uint32_t* const* pads, int rank, int world) {
  pkb::dev::barrier_block(pads, rank, world, kChannel);
}

void barrier(pkb_ctx* ctx, cudaStream_t stream) {
  int threads = (ctx->world + 31) / 32 * 32;  // barrier_block needs a thread per rank
  barrier_kernel<<<1, threads, 0, stream>>>(ctx->pads_dev, ctx->rank, ctx->world);
}

// One thread per (lookup, 16-byte piece): consecutive threads read consecutive pieces of
// one row, so each warp issues whole-row (coalesced) loads from one owner.
__global__ void gather16(Tables t, const int64_t* idx, int64_t lookups, int64_t rows_per_rank, int world,
                         int64_t pieces, uint4* out) {
  int64_t total = lookups * pieces, stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t g = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; g < total; g += stride) {
    int64_t i = g / pieces, j = g - i * pieces;
    int64_t id = idx[i];
    int owner = owner_of(id, rows_per_rank, world);
    int64_t row = id - owner * rows_per_rank;
    const uint4* src = reinterpret_cast<const uint4*>(t.base[owner]) + row * pieces + j;
    out[g] = *src;
  }
}

__global__ void gather_bytes(Tables t, const int64_t* idx, int64_t lookups, int64_t rows_per_rank, int world,
                             int64_t row_bytes, char* out) {
  int64_t total = lookups * row_bytes, stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t g = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; g < total; g += stride) {
    int64_t i = g / row_bytes, j = g - i * row_bytes;
    int64_t id = idx[i];
    int owner = owner_of(id, rows_per_rank, world);
    out[g] = t.base[owner][(id - owner * rows_per_rank) * row_bytes + j];
  }
}

int blocks_for(pkb_ctx* ctx, int64_t work) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device);
  return int(std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, int64_t(8) * sms));
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  const pkb_tensor &idx = in[0], &table = in[1];
  size_t es = pkb_dtype_size(table.dtype);
  if (!es || ctx->world > kMaxWorld || idx.dtype != PKB_INT64) {
    ctx->set_error(ctx, "rec_sharded_embedding_lookup: unknown dtype, int64 indices needed, or more than 64 ranks");
    return 1;
  }
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  int64_t lookups = idx.sizes[0], rows = table.sizes[0], row_bytes = table.sizes[1] * int64_t(es);
  Tables t;
  bool aligned = row_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(out[0].data) % 16 == 0;
  for (int p = 0; p < ctx->world; ++p) {
    t.base[p] = static_cast<const char*>(ctx->peer_ptr(ctx, table.data, p));
    aligned = aligned && reinterpret_cast<uintptr_t>(t.base[p]) % 16 == 0;
  }
  barrier(ctx, stream);
  if (lookups > 0) {
    if (aligned) {
      int64_t pieces = row_bytes / 16;
      gather16<<<blocks_for(ctx, lookups * pieces), kThreads, 0, stream>>>(
          t, static_cast<const int64_t*>(idx.data), lookups, rows, ctx->world, pieces, static_cast<uint4*>(out[0].data));
    } else {
      gather_bytes<<<blocks_for(ctx, lookups * row_bytes), kThreads, 0, stream>>>(
          t, static_cast<const int64_t*>(idx.data), lookups, rows, ctx->world, row_bytes, static_cast<char*>(out[0].data));
    }
  }
  barrier(ctx, stream);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    ctx->set_error(ctx, cudaGetErrorString(err));
    return 1;
  }
  return 0;
}
