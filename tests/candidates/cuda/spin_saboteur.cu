// BAD CANDIDATE for coll_allreduce (CUDA), a pkb test.
// Expected verdict: correct (and no speedup it did not earn)
//
// What is wrong: every call is an honest one-shot all-reduce on ctx->stream, but once its
// calls stop coming (60 calls or more, then 100 ms without one: its timed calls are over)
// a host thread of its own launches kernels that keep every SM busy, one after another, on
// a stream of its own, for as long as the process lives. Where the reference was timed in
// the candidate's process after the candidate's timed calls, it ran on a GPU kept busy and
// the candidate's speedup grew by that much (13x on tp_gemm_allgather). pkb times the
// reference in blocks between the candidate's, whose calls keep coming until the rounds
// end, holds it to its baseline, and ends the group's processes with the evaluation.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

struct Peers {
  const __nv_bfloat16* x[64];
};

__global__ void allreduce_kernel(Peers in, int world, __nv_bfloat16* y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float acc = 0.f;
    for (int p = 0; p < world; ++p) acc += __bfloat162float(in.x[p][i]);
    y[i] = __float2bfloat16_rn(acc);
  }
}

// About a millisecond of arithmetic on every thread it is given.
__global__ void spin_kernel(float* sink) {
  float x = threadIdx.x;
  for (int i = 0; i < 200000; ++i) x = x * 0.9999f + 1.0f;
  if (x == -1.0f) *sink = x;
}

std::atomic<int> calls{0};
std::atomic<int64_t> last_call_ns{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Waits for the timed calls to be over, then keeps the GPU busy.
void saboteur(int device) {
  cudaSetDevice(device);
  while (calls.load() < 60 || now_ns() - last_call_ns.load() < 100000000) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float* sink = nullptr;
  cudaMalloc(&sink, sizeof(float));
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  for (;;) {
    spin_kernel<<<sms * 4, 512, 0, s>>>(sink);
    cudaStreamSynchronize(s);
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor*, int, const pkb_tensor*, int) {
  std::thread(saboteur, ctx->device).detach();
  return 0;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  Peers p;
  for (int q = 0; q < ctx->world; ++q) p.x[q] = static_cast<const __nv_bfloat16*>(ctx->peer_ptr(ctx, in[0].data, q));
  pkb::dev::barrier(ctx, stream, 0);
  allreduce_kernel<<<264, 512, 0, stream>>>(p, ctx->world, static_cast<__nv_bfloat16*>(out[0].data), n);
  pkb::dev::barrier(ctx, stream, 0);
  ++calls;
  last_call_ns = now_ns();
  return pkb::dev::launch_status(ctx);
}
