// BAD CANDIDATE for coll_allreduce (CUDA), a pkb test.
// Expected verdict: correct (and no speedup it did not earn)
//
// What is wrong, or what an honest design may do by accident: every call is an honest
// one-shot all-reduce on ctx->stream, but once its calls stop coming (60 calls or more,
// then 100 ms without one) it leaves a persistent kernel resident on every SM, on a stream
// of its own, polling a flag, as a persistent communication kernel between calls would;
// pkb_finalize stops it. Where the reference was timed after the candidate's calls in its
// process, it shared the GPU with that kernel. pkb times the reference in blocks between
// the candidate's, whose calls keep coming until the rounds end, and holds it to its
// baseline.
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

// Resident until *stop is set: every thread spins on it.
__global__ void resident(volatile int* stop) {
  while (*stop == 0) __nanosleep(100);
}

std::atomic<int> calls{0};
std::atomic<int64_t> last_call_ns{0};
std::atomic<bool> launched{false};
int* stop_flag = nullptr;  // host-mapped, so pkb_finalize can set it while the kernel runs
std::thread* watcher = nullptr;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void launch_when_idle(int device) {
  cudaSetDevice(device);
  while (calls.load() < 60 || now_ns() - last_call_ns.load() < 100000000) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  int* dev_flag = nullptr;
  cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_flag), stop_flag, 0);
  resident<<<sms * 2, 1024, 0, s>>>(dev_flag);
  launched = true;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor*, int, const pkb_tensor*, int) {
  if (cudaHostAlloc(reinterpret_cast<void**>(&stop_flag), sizeof(int), cudaHostAllocMapped) != cudaSuccess) return 1;
  *stop_flag = 0;
  watcher = new std::thread(launch_when_idle, ctx->device);
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

PKB_EXPORT void pkb_finalize(pkb_ctx*) {
  *reinterpret_cast<volatile int*>(stop_flag) = 1;
}
