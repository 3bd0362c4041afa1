// pkb's own kernels (not the candidates'): the device barrier used to align ranks before
// timing and by pkb selftest.
#include <cuda_runtime.h>

#include "pkb/device.cuh"

namespace pkb::device {

namespace {
__global__ void barrier_kernel(uint32_t* const* pads, int rank, int world, int channel) {
  dev::barrier_block(pads, rank, world, channel);
}
}  // namespace

cudaError_t launch_barrier(uint32_t* const* pads, int rank, int world, int channel, cudaStream_t stream) {
  int threads = world < 32 ? 32 : world;
  barrier_kernel<<<1, threads, 0, stream>>>(pads, rank, world, channel);
  return cudaGetLastError();
}

}  // namespace pkb::device
