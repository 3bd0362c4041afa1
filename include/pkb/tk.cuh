// ThunderKittens / ParallelKittens glue for pkb candidates (.cu files that include
// kittens.cuh; pkb builds them with C++20, sm_90a or newer and ThunderKittens' include
// folder from PKB_TK_DIR or --tk-dir). Include after kittens.cuh.
//
// What it gives: parallel global layouts (kittens::pgl) over pkb's symmetric heap, so
// `x.gls[r]` is rank r's copy of a heap tensor as this rank addresses it (NVLink loads and
// stores through ordinary TK loads and stores), and barriers over pkb's signal pads.
// NVLink multicast is never used: the layouts are built with MULTICAST = false, so
// multimem instructions and cuMulticast objects stay out of pkb candidates.
#pragma once

#include "kittens.cuh"
#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace pkb {
namespace tk {

// A parallel global layout of up to NUM_DEVICES ranks over a heap tensor, without multicast.
template <class GL, int NUM_DEVICES>
using pgl = kittens::pgl<GL, NUM_DEVICES, false>;

// The pgl of `local` (a pointer into this rank's heap: an input, an output or a
// ctx->symm_alloc buffer) with dims (b, d, r, c): gls[p] is rank p's copy. Needs
// PGL::num_devices >= ctx->world; slots past the world repeat this rank's copy.
template <class PGL>
PGL make_pgl(const pkb_ctx* ctx, const void* local, int b, int d, int r, int c) {
  uint64_t ptrs[PGL::num_devices];
  for (int p = 0; p < PGL::num_devices; ++p) {
    int q = p < ctx->world ? p : ctx->rank;
    ptrs[p] = reinterpret_cast<uint64_t>(dev::peer_ptr(local, ctx->heap_bases, ctx->rank, q));
  }
  return kittens::make_pgl<PGL, false>(ptrs, b, d, r, c);
}

// What a kernel needs to synchronise ranks: the signal pads and its channel.
struct Sync {
  uint32_t* const* pads;  // ctx->pads_dev
  int rank, world, channel;

  // Every rank's block runs this (every thread of one block per rank, blockDim.x >= world):
  // after it, every write any rank's block made before it is visible to every rank.
  __device__ __forceinline__ void barrier() const { dev::barrier_block(pads, rank, world, channel); }
  // Signal rank `dst`, and wait for rank `src`'s signal (one thread each).
  __device__ __forceinline__ void signal(int dst) const {
    __threadfence_system();
    dev::put_signal(pads[dst], dev::slot(channel, rank, world));
  }
  __device__ __forceinline__ void wait(int src) const { dev::wait_signal(pads[rank], dev::slot(channel, src, world)); }
};

inline Sync sync_of(const pkb_ctx* ctx, int channel) { return Sync{ctx->pads_dev, ctx->rank, ctx->world, channel}; }

// A barrier of every rank on `channel` as a one-block kernel on `stream` (pkb/device.cuh).
inline void barrier(const pkb_ctx* ctx, cudaStream_t stream, int channel) { dev::barrier(ctx, stream, channel); }

}  // namespace tk
}  // namespace pkb
