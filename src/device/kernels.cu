// pkb's own kernels (not the candidates'): the device barrier used to align ranks before
// timing and by pkb selftest.
#include <cuda_runtime.h>

#include "pkb/device.cuh"

namespace pkb::device {

namespace {
__global__ void barrier_kernel(uint32_t* const* pads, int rank, int world, int channel) {
  dev::barrier_block(pads, rank, world, channel);
}
__global__ void signal_kernel(uint32_t* pad, int slot, bool put) {
  if (put) dev::put_signal(pad, slot);
  else dev::wait_signal(pad, slot);
}
// Every thread a chain of dependent multiply-adds: a fixed amount of work on every SM, whose
// time only another process's kernels on the same SMs can stretch.
__global__ void probe_kernel(float* sink, int steps) {
  float x = threadIdx.x * 1e-3f, y = 1.0f + blockIdx.x * 1e-6f;
  for (int i = 0; i < steps; ++i) x = fmaf(x, 0.999f, y);
  if (x == 12345.0f) sink[0] = x;  // never true: keeps the chain
}
}  // namespace

cudaError_t launch_probe(float* sink, int sms, cudaStream_t stream) {
  probe_kernel<<<4 * sms, 256, 0, stream>>>(sink, 4096);
  return cudaGetLastError();
}

cudaError_t launch_barrier(uint32_t* const* pads, int rank, int world, int channel, cudaStream_t stream) {
  int threads = world < 32 ? 32 : world;
  barrier_kernel<<<1, threads, 0, stream>>>(pads, rank, world, channel);
  return cudaGetLastError();
}

// One signal of torch's symmetric-memory protocol (device.cuh's put_signal on a peer's pad,
// wait_signal on one's own): what an original-format module's handle.put_signal and
// wait_signal launch (src/python/original_candidate.cpp).
cudaError_t launch_signal(uint32_t* pad, int slot, bool put, cudaStream_t stream) {
  signal_kernel<<<1, 1, 0, stream>>>(pad, slot, put);
  return cudaGetLastError();
}

}  // namespace pkb::device
