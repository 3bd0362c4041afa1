// BAD CANDIDATE for coll_allreduce (CPU device), a pkb test.
// Expected verdict: integrity_violation
//
// What is wrong: it is honest only while it thinks it is watched. In its first twelve
// calls (the correctness trials and the start of the warm-up) it computes in the call;
// after that it queues the work for a host thread of its own and returns at once, so the
// output is only right some milliseconds after pkb_run returned. A check of the live
// buffers long after the call passes it; pkb judges the copy it takes as pkb_run returns.
//
// The all-reduce itself is a plain one-shot one (bf16 only): barrier, every rank sums every
// rank's x into its own y, barrier. The worker runs the queued calls in order, so the
// ranks' barriers still pair up.
#include <stdint.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

void allreduce(pkb_ctx* ctx, const void* x, void* y, size_t n) {
  const uint16_t* xs[64];
  for (int p = 0; p < ctx->world; ++p) xs[p] = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, x, p));
  uint16_t* out = static_cast<uint16_t*>(y);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int p = 0; p < ctx->world; ++p) acc += pkb::host::bf16_to_float(xs[p][i]);
    out[i] = pkb::host::float_to_bf16(acc);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
}

// A worker that runs queued calls, each a little late.
struct Worker {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  std::thread thread{[this] {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return !queue.empty(); });
        job = std::move(queue.front());
        queue.pop_front();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      job();
    }
  }};
  void push(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mu);
    queue.push_back(std::move(job));
    cv.notify_one();
  }
};

int calls = 0;
Worker* worker = nullptr;

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  if (++calls <= 12) {
    allreduce(ctx, in[0].data, out[0].data, n);
    return 0;
  }
  if (!worker) worker = new Worker;  // never joined: it dies with the rank
  const void* x = in[0].data;
  void* y = out[0].data;
  worker->push([ctx, x, y, n] { allreduce(ctx, x, y, n); });
  return 0;
}
