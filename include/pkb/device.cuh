// Device-side helpers for CUDA candidates over the symmetric heap (see solution.h).
//
// Signal pads hold one uint32 slot per (channel, source rank): slot(channel, src) of rank
// r's pad is where src signals r on that channel. put_signal flips a peer's slot 0 -> 1
// with release semantics at system scope; wait_signal flips its own slot 1 -> 0 with
// acquire semantics, so pads return to zero and can be reused without a reset.
#pragma once

#include <cuda/atomic>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace pkb {
namespace dev {

__device__ __forceinline__ int slot(int channel, int src, int world) { return channel * world + src; }

// Marks `pad[slot]` (a peer's pad) as signalled; waits while a previous signal there is
// still unconsumed.
__device__ __forceinline__ void put_signal(uint32_t* pad, int slot) {
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> a(pad[slot]);
  uint32_t expected = 0;
  while (!a.compare_exchange_strong(expected, 1u, cuda::memory_order_release, cuda::memory_order_relaxed))
    expected = 0;
}

// Waits for `pad[slot]` (this rank's pad) to be signalled and consumes the signal.
__device__ __forceinline__ void wait_signal(uint32_t* pad, int slot) {
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> a(pad[slot]);
  uint32_t expected = 1;
  while (!a.compare_exchange_strong(expected, 0u, cuda::memory_order_acquire, cuda::memory_order_relaxed))
    expected = 1;
}

// A barrier across all ranks, called by every thread of one block on each rank: after it,
// every write any rank's block made before it is visible to every rank. Needs
// blockDim.x >= world. `pads` holds every rank's pad (pkb_ctx.pads_dev).
__device__ __forceinline__ void barrier_block(uint32_t* const* pads, int rank, int world, int channel) {
  __syncthreads();
  if (threadIdx.x < world) {
    int peer = threadIdx.x;
    __threadfence_system();
    put_signal(pads[peer], slot(channel, rank, world));
    wait_signal(pads[rank], slot(channel, peer, world));
  }
  __syncthreads();
}

// The address of `local` (inside this rank's heap region) in `peer`'s region.
template <class T>
__device__ __host__ __forceinline__ T* peer_ptr(T* local, void* const* bases, int rank, int peer) {
  ptrdiff_t off = reinterpret_cast<const char*>(local) - reinterpret_cast<const char*>(bases[rank]);
  return reinterpret_cast<T*>(reinterpret_cast<char*>(bases[peer]) + off);
}

// fp32 from and to the floating element types, for arithmetic in fp32 (round once, at the end).
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
__device__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// 16 bytes of T: the unit of vectorised loads and stores (the pointer must be 16-byte aligned).
template <class T>
struct alignas(16) Pack {
  T v[16 / sizeof(T)];
};

}  // namespace dev
}  // namespace pkb
