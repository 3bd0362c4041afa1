// GOOD CANDIDATE for coll_allgather (CUDA), a pkb test of timing accuracy.
// Expected verdict: correct
//
// The all-gather as copies: y[p] = rank p's x, one cudaMemcpyAsync per rank from its heap
// slot (peer copies over NVLink), bracketed by barriers when there are peers. At W=1 it is
// a single device-to-device copy, so its time must match the copy time pkb measures in the
// same run (scripts/gpu-check.sh, stage bandwidth).
#include <cuda_runtime.h>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

__global__ void barrier_kernel(uint32_t* const* pads, int rank, int world) {
  pkb::dev::barrier_block(pads, rank, world, 0);
}

void barrier(pkb_ctx* ctx, cudaStream_t s) {
  if (ctx->world > 1) barrier_kernel<<<1, (ctx->world + 31) / 32 * 32, 0, s>>>(ctx->pads_dev, ctx->rank, ctx->world);
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  cudaStream_t s = static_cast<cudaStream_t>(ctx->stream);
  size_t bytes = pkb_dtype_size(in[0].dtype);
  for (int d = 0; d < in[0].ndim; ++d) bytes *= in[0].sizes[d];
  barrier(ctx, s);
  for (int p = 0; p < ctx->world; ++p)
    cudaMemcpyAsync(static_cast<char*>(out[0].data) + p * bytes, ctx->peer_ptr(ctx, in[0].data, p), bytes,
                    cudaMemcpyDeviceToDevice, s);
  barrier(ctx, s);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
