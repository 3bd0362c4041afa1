// What differs between the CUDA and the CPU device, for the ranks: selecting the device,
// waiting for it, seeded generators, barriers through the symmetric heap, and the probe
// the parent runs instead of touching CUDA itself.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace pkb::heap {
class Heap;
}

namespace pkb::device {

bool cuda_built();  // was pkb built with the CUDA device
void select(at::Device d);
void synchronize(at::Device d);
at::Generator generator(at::Device d, uint64_t seed);

// A barrier of every rank through the heap's signal pads on `channel`: a one-block kernel
// on the current stream (CUDA heaps; returns once enqueued) or a spin on the host.
void heap_barrier(const heap::Heap& h, int channel);

// The GPUs as CUDA sees them, as JSON: count, names, compute capability, memory, SMs, L2,
// peer access, NVLink state, multicast support, driver/runtime/NCCL versions.
// {"cuda_built": false} where pkb has no CUDA device.
std::string probe_json();

}  // namespace pkb::device
