// BAD CANDIDATE for coll_allreduce (CUDA), a pkb test.
// Expected verdict: crash
//
// What is wrong: the kernel accumulates into a scratch buffer that pkb_init was meant to
// allocate into ctx->user, but it has no pkb_init: the pointer is NULL and the kernel dies
// with an illegal address (cudaErrorIllegalAddress, which poisons the CUDA context).
//
// Otherwise a plain one-shot all-reduce (bf16 only): after a barrier kernel every rank sums
// every rank's x into its own y, then a second barrier kernel; all on ctx->stream.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

struct Inputs {
  const __nv_bfloat16* x[64];  // every rank's x, as this rank addresses it
};

__global__ void barrier_kernel(uint32_t* const* pads, int rank, int world) {
  pkb::dev::barrier_block(pads, rank, world, 0);
}

// Accumulates in `sum`, a scratch buffer of n floats.
__global__ void allreduce_kernel(Inputs in, int world, __nv_bfloat16* y, size_t n, float* sum) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    sum[i] = 0.f;
    for (int p = 0; p < world; ++p) sum[i] += __bfloat162float(in.x[p][i]);
    y[i] = __float2bfloat16_rn(sum[i]);
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) {
    ctx->set_error(ctx, "bf16 and at most 64 ranks only");
    return 1;
  }
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  Inputs x;
  for (int p = 0; p < ctx->world; ++p) x.x[p] = static_cast<const __nv_bfloat16*>(ctx->peer_ptr(ctx, in[0].data, p));
  auto* y = static_cast<__nv_bfloat16*>(out[0].data);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  barrier_kernel<<<1, 64, 0, stream>>>(ctx->pads_dev, ctx->rank, ctx->world);
  float* sum = static_cast<float*>(ctx->user);  // the scratch pkb_init should have made: NULL
  allreduce_kernel<<<264, 512, 0, stream>>>(x, ctx->world, y, n, sum);
  barrier_kernel<<<1, 64, 0, stream>>>(ctx->pads_dev, ctx->rank, ctx->world);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
