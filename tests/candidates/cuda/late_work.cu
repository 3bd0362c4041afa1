// BAD CANDIDATE for coll_allreduce (CUDA), a pkb test.
// Expected verdict: integrity_violation
//
// What is wrong: honest only while it thinks it is watched. In its first twelve calls (the
// correctness trials and the start of the warm-up) it runs on ctx->stream; after that it
// hands the work to a host thread that waits a few milliseconds, then
// launches it on a stream of its own after an event recorded on ctx->stream, and returns
// at once. The outputs are right long after the call; the copy pkb enqueues on
// ctx->stream right after the call has them unwritten.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

struct Peers {
  const __nv_bfloat16* x[64];  // every rank's x, as this rank addresses it
};

__global__ void allreduce_kernel(Peers in, int world, __nv_bfloat16* y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float acc = 0.f;
    for (int p = 0; p < world; ++p) acc += __bfloat162float(in.x[p][i]);
    y[i] = __float2bfloat16_rn(acc);
  }
}

// barrier, sum, barrier on `stream`.
void allreduce(pkb_ctx* ctx, const void* x, void* y, size_t n, cudaStream_t stream) {
  Peers p;
  for (int q = 0; q < ctx->world; ++q) p.x[q] = static_cast<const __nv_bfloat16*>(ctx->peer_ptr(ctx, x, q));
  pkb::dev::barrier(ctx, stream, 0);
  allreduce_kernel<<<264, 512, 0, stream>>>(p, ctx->world, static_cast<__nv_bfloat16*>(y), n);
  pkb::dev::barrier(ctx, stream, 0);
}

// Runs queued launches in order, each a few milliseconds late.
struct Worker {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  int device = 0;
  std::thread thread{[this] {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return !queue.empty(); });
        job = std::move(queue.front());
        queue.pop_front();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      cudaSetDevice(device);
      job();
    }
  }};
  void push(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mu);
    queue.push_back(std::move(job));
    cv.notify_one();
  }
};

struct State {
  int calls = 0;
  Worker* worker = nullptr;
  cudaStream_t stream = nullptr;
};

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor*, int, const pkb_tensor*, int) {
  State* s = new State;
  cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
  ctx->user = s;
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  State* s = static_cast<State*>(ctx->user);
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  auto main = static_cast<cudaStream_t>(ctx->stream);
  if (++s->calls <= 12) {
    allreduce(ctx, in[0].data, out[0].data, n, main);
    return pkb::dev::launch_status(ctx);
  }
  if (!s->worker) {
    s->worker = new Worker;  // never joined: it dies with the rank
    s->worker->device = ctx->device;
  }
  cudaEvent_t ready;
  cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
  cudaEventRecord(ready, main);
  const void* x = in[0].data;
  void* y = out[0].data;
  s->worker->push([ctx, s, ready, x, y, n] {
    cudaStreamWaitEvent(s->stream, ready, 0);
    allreduce(ctx, x, y, n, s->stream);
    cudaEventDestroy(ready);
  });
  return 0;
}
