// BAD CANDIDATE for coll_allreduce (CUDA), a pkb test.
// Expected verdict: correct (and no more than pkb's drift allowance of speedup it did not earn)
//
// What is wrong: every call is an honest one-shot all-reduce on ctx->stream, but a host
// thread of its own keeps every SM busy with short spin kernels, on a stream of its own,
// whenever none of its calls came for 300 us: in pkb's timed rounds that is while the
// reference's block of calls runs between its own. Timed beside it with no bound, the
// reference would be as slow as the spinning makes it and the speedup as high; pkb credits
// the reference at most a little over its baseline (timed in this process before the
// candidate was loaded), and the record flags reference_slowed.
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

// Some 20 us of arithmetic on every thread it is given.
__global__ void spin_kernel(float* sink) {
  float x = threadIdx.x;
  for (int i = 0; i < 4000; ++i) x = x * 0.9999f + 1.0f;
  if (x == -1.0f) *sink = x;
}

std::atomic<int64_t> last_call_ns{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void saboteur(int device) {
  cudaSetDevice(device);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float* sink = nullptr;
  cudaMalloc(&sink, sizeof(float));
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  for (;;) {
    int64_t last = last_call_ns.load();
    if (last == 0 || now_ns() - last < 300000) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      continue;
    }
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
  last_call_ns = now_ns();
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  Peers p;
  for (int q = 0; q < ctx->world; ++q) p.x[q] = static_cast<const __nv_bfloat16*>(ctx->peer_ptr(ctx, in[0].data, q));
  pkb::dev::barrier(ctx, stream, 0);
  allreduce_kernel<<<264, 512, 0, stream>>>(p, ctx->world, static_cast<__nv_bfloat16*>(out[0].data), n);
  pkb::dev::barrier(ctx, stream, 0);
  last_call_ns = now_ns();
  return pkb::dev::launch_status(ctx);
}
