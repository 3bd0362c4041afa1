// The device layer where pkb was built without CUDA: the CPU device only.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>

#include "device/device.hpp"
#include "heap/heap.hpp"
#include "pkb/host.hpp"

namespace pkb::device {

bool cuda_built() { return false; }

void select(at::Device d) {
  if (!d.is_cpu()) throw std::runtime_error("pkb was built without the CUDA device");
}

void synchronize(at::Device) {}

at::Generator generator(at::Device d, uint64_t seed) {
  select(d);
  return at::detail::createCPUGenerator(seed);
}

void heap_barrier(const heap::Heap& h, int channel) {
  host::barrier(h.pads().data(), h.rank(), h.world(), channel);
}

std::string probe_json() { return R"({"cuda_built": false, "devices": []})"; }

}  // namespace pkb::device
