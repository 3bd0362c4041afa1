// cp_ring_attention on CUDA, no NCCL: causal ring attention with zig-zag shards, the K/V
// blocks pushed to the next rank through the symmetric heap while the current block is
// attended to.
//
// Rank r holds q, k, v (B, S, H, D) for chunks r and 2W-1-r of the sequence. At step s
// (0..W-1) it holds rank (r-s)'s K/V block: its own input at step 0, then receive slot
// s % 2 (two K/V slots per rank in the symmetric heap, used alternately). Each step:
//   * compute stream: wait for the block's "ready" signal (s >= 1); attend to it;
//   * push stream (copy engines, in parallel with the attention): forward the block into
//     the next rank's slot (s+1) % 2 with cudaMemcpyAsync through the peer mapping, then
//     signal "ready" on the next rank's pad.
// Step 0 attends to the own block under the causal mask (by global position); a block from
// an earlier rank is seen by all queries but only in its first chunk; a block from a later
// rank whole, but only by the second chunk's queries (so every rank does the same work).
// The attention kernel is a flash-style loop (fp32 online softmax; one query row per
// thread, K/V tiles in shared memory; CUDA cores, not tensor cores: a correctness-first
// kernel) that folds each block into a running output, max and sum kept in fp32 across the
// steps; a last kernel normalises and rounds. Each rank receives W-1 blocks, as a ring
// must, and only the last step's attention is not overlapped with a transfer.
//
// Flow control: slot (s+1) % 2 of the next rank last held its step s-1 block, so from step
// 2 on the push waits for the next rank's "done with step s-1" acknowledgement, which a
// rank sends (for steps 1..W-3) once its attention on that slot and its own forward of it
// are both done. Signal-pad channels: 0 the opening barrier (no rank writes a slot its
// owner still reads from the previous call), 1 ready, 2 acknowledgements. Waits and
// signals are one-block kernels (pkb::dev::wait_signal / put_signal, system-scope
// acquire/release after a system fence); the push stream joins ctx->stream before the
// final kernel, so all work is ordered on ctx->stream when pkb_run returns. Slots need
// 4*B*S*H*D elements of heap: within what pkb gives by default (twice the inputs and outputs).
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <string>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

constexpr int kBarrier = 0, kReady = 1, kAck = 2;  // signal-pad channels
constexpr int kRows = 64;                          // queries per block, one per thread
constexpr int kTile = 32;                          // keys per shared-memory tile

struct State {
  void* slot_k[2] = {nullptr, nullptr};
  void* slot_v[2] = {nullptr, nullptr};
  float* acc = nullptr;  // (B, S, H, D) running output
  float* mx = nullptr;   // (B, S, H) running max (log2 units)
  float* sum = nullptr;  // (B, S, H) running sum
  cudaStream_t push = nullptr;
  cudaEvent_t have_block = nullptr, attended = nullptr, pushed = nullptr;

  ~State() {
    cudaDeviceSynchronize();
    cudaFree(acc);
    cudaFree(mx);
    cudaFree(sum);
    if (have_block) cudaEventDestroy(have_block);
    if (attended) cudaEventDestroy(attended);
    if (pushed) cudaEventDestroy(pushed);
    if (push) cudaStreamDestroy(push);
  }
};

// pkb::dev::slot, on the host: where `src` signals on `channel`.
int slot_of(int channel, int src, int world) { return channel * world + src; }

__global__ void barrier_kernel(uint32_t* const* pads, int rank, int world) {
  pkb::dev::barrier_block(pads, rank, world, kBarrier);
}

__global__ void wait_kernel(uint32_t* pad, int slot) {
  if (threadIdx.x == 0) pkb::dev::wait_signal(pad, slot);
}

__global__ void signal_kernel(uint32_t* pad, int slot) {
  if (threadIdx.x == 0) {
    __threadfence_system();
    pkb::dev::put_signal(pad, slot);
  }
}

// Global position of local row i of rank r: chunks r and 2W-1-r of c rows each.
__device__ __forceinline__ int64_t position(int64_t i, int64_t c, int r, int w) {
  return i < c ? r * c + i : (2 * w - 1 - r) * c + (i - c);
}

// Folds keys [k0, k0+nk) of block (k, v) into queries [q0, q0+nq) of (acc, mx, sum).
// grid (ceil(nq/kRows), H, B), kRows threads. `first`: start from empty state. `masked`:
// the causal mask of the own block. scale includes log2(e) (exp2 below).
template <class T, int D>
__global__ void attend_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, float* acc,
                              float* mx, float* sum, int64_t S, int64_t H, int64_t q0, int64_t nq, int64_t k0,
                              int64_t nk, bool masked, bool first, int rank, int world, float scale) {
  __shared__ float ks[kTile][D];
  __shared__ float vs[kTile][D];
  const int64_t b = blockIdx.z, h = blockIdx.y, c = S / 2;
  const int64_t i = q0 + int64_t(blockIdx.x) * kRows + threadIdx.x;
  const bool active = i < q0 + nq;
  const int64_t row = active ? (b * S + i) * H + h : 0;
  float qr[D], o[D];
  float m = -INFINITY, l = 0.f;
  if (active) {
#pragma unroll
    for (int d = 0; d < D; ++d) qr[d] = pkb::dev::to_float(q[row * D + d]) * scale;
    if (first) {
#pragma unroll
      for (int d = 0; d < D; ++d) o[d] = 0.f;
    } else {
#pragma unroll
      for (int d = 0; d < D; ++d) o[d] = acc[row * D + d];
      m = mx[row];
      l = sum[row];
    }
  }
  const int64_t pi = position(i, c, rank, world);
  for (int64_t j0 = 0; j0 < nk; j0 += kTile) {
    const int n = int(nk - j0 < kTile ? nk - j0 : kTile);
    __syncthreads();
    for (int idx = threadIdx.x; idx < n * D; idx += blockDim.x) {
      const int jj = idx / D, d = idx % D;
      const int64_t at = ((b * S + k0 + j0 + jj) * H + h) * D + d;
      ks[jj][d] = pkb::dev::to_float(k[at]);
      vs[jj][d] = pkb::dev::to_float(v[at]);
    }
    __syncthreads();
    if (!active) continue;
    for (int jj = 0; jj < n; ++jj) {
      if (masked && position(k0 + j0 + jj, c, rank, world) > pi) continue;
      float sc = 0.f;
#pragma unroll
      for (int d = 0; d < D; ++d) sc += qr[d] * ks[jj][d];
      if (sc > m) {
        const float corr = exp2f(m - sc);  // 0 while m is -inf
        l *= corr;
#pragma unroll
        for (int d = 0; d < D; ++d) o[d] *= corr;
        m = sc;
      }
      const float p = exp2f(sc - m);
      l += p;
#pragma unroll
      for (int d = 0; d < D; ++d) o[d] += p * vs[jj][d];
    }
  }
  if (active) {
#pragma unroll
    for (int d = 0; d < D; ++d) acc[row * D + d] = o[d];
    mx[row] = m;
    sum[row] = l;
  }
}

template <class T>
__global__ void finish_kernel(const float* acc, const float* sum, T* out, int64_t rows, int d) {
  const int64_t n = rows * d, stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += stride)
    out[i] = pkb::dev::from_float<T>(acc[i] / sum[i / d]);
}

struct Shape {
  int64_t b, s, h, d;
  size_t elems() const { return size_t(b * s * h * d); }
};

template <class T, int D>
void attend(const State& st, const Shape& sh, const void* q, const void* k, const void* v, int64_t q0, int64_t nq,
            int64_t k0, int64_t nk, bool masked, bool first, int rank, int world, cudaStream_t stream) {
  const float scale = 1.4426950408889634f / sqrtf(float(D));
  dim3 grid(unsigned((nq + kRows - 1) / kRows), unsigned(sh.h), unsigned(sh.b));
  attend_kernel<T, D><<<grid, kRows, 0, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                 static_cast<const T*>(v), st.acc, st.mx, st.sum, sh.s, sh.h, q0, nq,
                                                 k0, nk, masked, first, rank, world, scale);
}

template <class T, int D>
int run(pkb_ctx* ctx, const pkb_tensor* in, pkb_tensor* out) {
  State& st = *static_cast<State*>(ctx->user);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  const int r = ctx->rank, w = ctx->world, prev = (r + w - 1) % w, next = (r + 1) % w;
  const Shape sh{in[0].sizes[0], in[0].sizes[1], in[0].sizes[2], in[0].sizes[3]};
  const size_t bytes = sh.elems() * sizeof(T);
  const int64_t c = sh.s / 2;
  uint32_t* const* pads = ctx->pads;  // host array of device pointers

  PKB_CHECK(cudaGetLastError());
  barrier_kernel<<<1, (w + 31) / 32 * 32, 0, stream>>>(ctx->pads_dev, r, w);
  for (int s = 0; s < w; ++s) {
    const int src = (r - s + w) % w;
    const void* ck = s == 0 ? in[1].data : st.slot_k[s % 2];
    const void* cv = s == 0 ? in[2].data : st.slot_v[s % 2];
    if (s >= 1) wait_kernel<<<1, 32, 0, stream>>>(pads[r], slot_of(kReady, prev, w));
    if (s < w - 1) {  // forward the block while it is attended to
      PKB_CHECK(cudaEventRecord(st.have_block, stream));
      PKB_CHECK(cudaStreamWaitEvent(st.push, st.have_block, 0));
      if (s >= 2) wait_kernel<<<1, 32, 0, st.push>>>(pads[r], slot_of(kAck, next, w));
      PKB_CHECK(cudaMemcpyAsync(ctx->peer_ptr(ctx, st.slot_k[(s + 1) % 2], next), ck, bytes, cudaMemcpyDeviceToDevice,
                            st.push));
      PKB_CHECK(cudaMemcpyAsync(ctx->peer_ptr(ctx, st.slot_v[(s + 1) % 2], next), cv, bytes, cudaMemcpyDeviceToDevice,
                            st.push));
      signal_kernel<<<1, 32, 0, st.push>>>(pads[next], slot_of(kReady, r, w));
    }
    if (s == 0)
      attend<T, D>(st, sh, in[0].data, ck, cv, 0, sh.s, 0, sh.s, true, true, r, w, stream);
    else if (src < r)
      attend<T, D>(st, sh, in[0].data, ck, cv, 0, sh.s, 0, c, false, false, r, w, stream);
    else
      attend<T, D>(st, sh, in[0].data, ck, cv, c, sh.s - c, 0, sh.s, false, false, r, w, stream);
    if (s >= 1 && s <= w - 3) {  // slot s % 2 is free once attended and forwarded
      PKB_CHECK(cudaEventRecord(st.attended, stream));
      PKB_CHECK(cudaStreamWaitEvent(st.push, st.attended, 0));
      signal_kernel<<<1, 32, 0, st.push>>>(pads[prev], slot_of(kAck, r, w));
    }
  }
  if (w > 1) {
    PKB_CHECK(cudaEventRecord(st.pushed, st.push));
    PKB_CHECK(cudaStreamWaitEvent(stream, st.pushed, 0));
  }
  const int64_t rows = sh.b * sh.s * sh.h;
  finish_kernel<T><<<unsigned((rows * sh.d + 255) / 256 < 4096 ? (rows * sh.d + 255) / 256 : 4096), 256, 0, stream>>>(
      st.acc, st.sum, static_cast<T*>(out[0].data), rows, int(sh.d));
  PKB_CHECK(cudaGetLastError());
  return 0;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int, const pkb_tensor*, int) {
  State* st = new State;
  ctx->user = st;
  const Shape sh{in[0].sizes[0], in[0].sizes[1], in[0].sizes[2], in[0].sizes[3]};
  if (sh.s % 2 || (sh.d != 64 && sh.d != 128)) {
    ctx->set_error(ctx, "cp_ring_attention: needs an even S and D = 64 or 128");
    return 1;
  }
  if (in[0].dtype != PKB_BF16 && in[0].dtype != PKB_FP16 && in[0].dtype != PKB_FP32) {
    ctx->set_error(ctx, "cp_ring_attention: dtype must be bf16, fp16 or fp32");
    return 1;
  }
  if (ctx->world > 1) {
    const size_t bytes = sh.elems() * pkb_dtype_size(in[0].dtype);
    for (int i = 0; i < 2; ++i) {
      st->slot_k[i] = ctx->symm_alloc(ctx, bytes);
      st->slot_v[i] = ctx->symm_alloc(ctx, bytes);
      if (!st->slot_k[i] || !st->slot_v[i]) {
        ctx->set_error(ctx, "cp_ring_attention: symmetric heap full (needs 4 K/V blocks; raise --heap-size)");
        return 1;
      }
    }
  }
  PKB_CHECK(cudaMalloc(&st->acc, sh.elems() * sizeof(float)));
  PKB_CHECK(cudaMalloc(&st->mx, size_t(sh.b * sh.s * sh.h) * sizeof(float)));
  PKB_CHECK(cudaMalloc(&st->sum, size_t(sh.b * sh.s * sh.h) * sizeof(float)));
  PKB_CHECK(cudaStreamCreateWithFlags(&st->push, cudaStreamNonBlocking));
  PKB_CHECK(cudaEventCreateWithFlags(&st->have_block, cudaEventDisableTiming));
  PKB_CHECK(cudaEventCreateWithFlags(&st->attended, cudaEventDisableTiming));
  PKB_CHECK(cudaEventCreateWithFlags(&st->pushed, cudaEventDisableTiming));
  return 0;
}

PKB_EXPORT void pkb_finalize(pkb_ctx* ctx) {
  delete static_cast<State*>(ctx->user);
  ctx->user = nullptr;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  const bool wide = in[0].sizes[3] == 128;
  switch (in[0].dtype) {
    case PKB_BF16: return wide ? run<__nv_bfloat16, 128>(ctx, in, out) : run<__nv_bfloat16, 64>(ctx, in, out);
    case PKB_FP16: return wide ? run<__half, 128>(ctx, in, out) : run<__half, 64>(ctx, in, out);
    default: return wide ? run<float, 128>(ctx, in, out) : run<float, 64>(ctx, in, out);
  }
}
