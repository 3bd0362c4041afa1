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
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>
#include <string>

#include "pkb/solution.h"

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

// ---- host side: what every candidate's pkb_run does around its kernels ----------------

template <int = 0>
__global__ void barrier_kernel(uint32_t* const* pads, int rank, int world, int channel) {
  barrier_block(pads, rank, world, channel);
}

// A barrier of every rank on `channel`, enqueued on `stream` as a one-block kernel: work
// enqueued after it on any rank sees every rank's work enqueued before it.
inline void barrier(const pkb_ctx* ctx, cudaStream_t stream, int channel) {
  int threads = (ctx->world + 31) / 32 * 32;  // barrier_block needs a thread per rank
  barrier_kernel<<<1, threads, 0, stream>>>(ctx->pads_dev, ctx->rank, ctx->world, channel);
}

// Blocks of `threads` for `work` items of one thread each, split over `parts` independent
// jobs; at most `per_sm` blocks per SM in all (kernels stride over what is left).
inline int blocks_for(const pkb_ctx* ctx, size_t work, int threads, int parts = 1, int per_sm = 4) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device);
  size_t cap = std::max(1, per_sm * sms / parts);
  return int(std::clamp<size_t>((work + threads - 1) / threads, 1, cap));
}

// pkb_run's result after its launches: 0, or 1 with the CUDA error said through set_error.
inline int launch_status(pkb_ctx* ctx) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return 0;
  ctx->set_error(ctx, cudaGetErrorString(err));
  return 1;
}

// Records a failed call in ctx (the call's text and the library's message) and says whether
// it failed: CUDA runtime calls, and cuBLAS and cuFFT calls where cublas_v2.h or cufft.h is
// included before this header.
inline bool failed(pkb_ctx* ctx, cudaError_t e, const char* call) {
  if (e == cudaSuccess) return false;
  ctx->set_error(ctx, (std::string(call) + ": " + cudaGetErrorString(e)).c_str());
  return true;
}

#ifdef CUBLAS_API_H_
inline bool failed(pkb_ctx* ctx, cublasStatus_t s, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return false;
  ctx->set_error(ctx, (std::string(call) + ": " + cublasGetStatusString(s)).c_str());
  return true;
}
#endif

#ifdef _CUFFT_H_
inline bool failed(pkb_ctx* ctx, cufftResult r, const char* call) {
  if (r == CUFFT_SUCCESS) return false;
  ctx->set_error(ctx, (std::string(call) + ": cuFFT error " + std::to_string(int(r))).c_str());
  return true;
}
#endif

}  // namespace dev
}  // namespace pkb

// In pkb_init and pkb_run (where `ctx` is the pkb_ctx*): return 1, the error said through
// ctx, when `call` fails.
#define PKB_CHECK(call)                                   \
  do {                                                    \
    if (::pkb::dev::failed(ctx, (call), #call)) return 1; \
  } while (0)
