// The device layer where pkb was built without CUDA: the CPU device only.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <stdexcept>

#include "device/device.hpp"
#include "device/host_timer.hpp"
#include "heap/heap.hpp"
#include "pkb/host.hpp"

namespace pkb::device {

bool cuda_built() { return false; }

void select(at::Device d) {
  if (!d.is_cpu()) throw std::runtime_error("pkb was built without the CUDA device");
}

void synchronize(at::Device) {}

void* make_stream(at::Device, bool) { return nullptr; }
void destroy_stream(at::Device, void*, bool) {}
void sync_stream(at::Device, void*) {}


std::unique_ptr<CallTimer> make_timer(at::Device, void*, int n) { return std::make_unique<HostTimer>(n); }
void flush_l2(at::Device, void*) {}
void probe(at::Device, void*) {}
Joined capture_joined(at::Device, void*, const std::function<void()>&) { return Joined::unknown; }
Clocks read_clocks(at::Device) { return {}; }
void write_flag(void*, uint32_t*, uint32_t) { throw std::logic_error("write_flag: no CUDA device in this pkb"); }
void wait_flag(void*, uint32_t*, uint32_t) { throw std::logic_error("wait_flag: no CUDA device in this pkb"); }
void copy_bytes(at::Device, void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
uint64_t peak_allocated(at::Device) { return 0; }
void reset_peak(at::Device) {}
void release_cached_memory(at::Device) {}

at::Generator generator(at::Device d, uint64_t seed) {
  select(d);
  return at::detail::createCPUGenerator(seed);
}

void heap_barrier(const heap::Heap& h, int channel, void*) {
  host::barrier(h.pads().data(), h.rank(), h.world(), channel);
}

std::string probe_json() { return R"({"cuda_built": false, "devices": []})"; }

}  // namespace pkb::device
