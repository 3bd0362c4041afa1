// BAD CANDIDATE for coll_allreduce (CUDA), a pkb test.
// Expected verdict: correct (and no faster than its honest self)
//
// What is wrong: it memoises results by the content of its input (the first 64 values,
// copied to the host), not by pointer, and replays a remembered result with one device
// copy, without communicating. If a timed call ever saw an input set an earlier call had
// seen, the replay would pay; pkb never lets that happen, so it always computes.
// Every rank hits or misses together, so nothing hangs.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <map>

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

std::map<uint64_t, void*> seen;  // content hash -> a device copy of the result

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  auto main = static_cast<cudaStream_t>(ctx->stream);
  uint16_t head[64];
  cudaMemcpyAsync(head, in[0].data, sizeof head, cudaMemcpyDeviceToHost, main);
  cudaStreamSynchronize(main);
  uint64_t key = 1469598103934665603ull;
  for (uint16_t v : head) key = (key ^ v) * 1099511628211ull;
  auto hit = seen.find(key);
  if (hit != seen.end()) {
    cudaMemcpyAsync(out[0].data, hit->second, n * 2, cudaMemcpyDeviceToDevice, main);
    return pkb::dev::launch_status(ctx);
  }
  allreduce(ctx, in[0].data, out[0].data, n, main);
  if (seen.size() < 256) {
    void* copy = nullptr;
    cudaMalloc(&copy, n * 2);
    cudaMemcpyAsync(copy, out[0].data, n * 2, cudaMemcpyDeviceToDevice, main);
    seen[key] = copy;
  }
  return pkb::dev::launch_status(ctx);
}
