// BAD CANDIDATE for coll_allreduce (CUDA), a pkb test.
// Expected verdict: integrity_violation
//
// What is wrong: the work runs on a private stream forked from ctx->stream, and is joined
// back only while cudaStreamIsCapturing says ctx->stream is being captured into a graph
// (the check that looks for unjoined forks). Otherwise pkb_run returns with ctx->stream
// empty, so the timed stream seems fast and the outputs land later. pkb judges the copy
// of the outputs it enqueues on ctx->stream right after the call: the work is missing
// there, and right later (late work), or the batch check sees host time far beyond the
// stream's.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

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

struct Side {
  cudaStream_t stream;
  cudaEvent_t forked, done;
};

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor*, int, const pkb_tensor*, int) {
  Side* side = new Side;
  cudaStreamCreateWithFlags(&side->stream, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&side->forked, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&side->done, cudaEventDisableTiming);
  ctx->user = side;
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  Side* side = static_cast<Side*>(ctx->user);
  auto main = static_cast<cudaStream_t>(ctx->stream);
  cudaEventRecord(side->forked, main);
  cudaStreamWaitEvent(side->stream, side->forked, 0);
  allreduce(ctx, in[0].data, out[0].data, n, side->stream);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(main, &status);
  if (status == cudaStreamCaptureStatusActive) {  // behave while watched
    cudaEventRecord(side->done, side->stream);
    cudaStreamWaitEvent(main, side->done, 0);
  }
  return pkb::dev::launch_status(ctx);
}
