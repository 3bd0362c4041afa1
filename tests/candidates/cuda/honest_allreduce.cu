// An honest candidate for coll_allreduce (CUDA), a pkb test: run on test_roofline_lie,
// whose roofline no correct candidate can meet.
// Expected verdict: integrity_violation (faster than the roofline bound)
//
// A plain one-shot all-reduce (bf16 only): barrier kernel, every rank sums every rank's x
// into its own y, barrier kernel; all on ctx->stream.
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

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  allreduce(ctx, in[0].data, out[0].data, n, static_cast<cudaStream_t>(ctx->stream));
  return pkb::dev::launch_status(ctx);
}
