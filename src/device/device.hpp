// What differs between the CUDA and the CPU device, for the ranks: selecting the device,
// waiting for it, seeded generators, streams and timers, barriers through the symmetric
// heap, clocks, and the probe the parent runs instead of touching CUDA itself.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pkb::heap {
class Heap;
}

namespace pkb::device {

bool cuda_built();  // was pkb built with the CUDA device
void select(at::Device d);  // and full-precision math libraries (references are the yardstick)
void synchronize(at::Device d);  // waits for all work on the device, then throws on a device error
at::Generator generator(at::Device d, uint64_t seed);

// A stream for the candidate (nullptr on the CPU device), made torch's current stream so
// references run on it too (unless not `current`).
void* make_stream(at::Device d, bool current = true);
void destroy_stream(at::Device d, void* stream, bool current = true);
void sync_stream(at::Device d, void* stream);

// Times n calls: start(i)/stop(i) bracket call i on `stream` (CUDA events) or on the host
// clock; elapsed_us() waits for the stream and returns the n durations.
class CallTimer {
 public:
  virtual ~CallTimer() = default;
  virtual void start(int i) = 0;
  virtual void stop(int i) = 0;
  virtual std::vector<double> elapsed_us() = 0;
};
std::unique_ptr<CallTimer> make_timer(at::Device d, void* stream, int n);

// Whether all work `call` enqueues from `stream` is joined back to it: the call is captured
// into a CUDA graph (so nothing runs) and a fork left unjoined fails the capture. Unknown
// on the CPU device, and when the call does something capture cannot record.
enum class Joined { yes, no, unknown };
Joined capture_joined(at::Device d, void* stream, const std::function<void()>& call);

// Evicts the L2 cache (writes a buffer twice its size on `stream`); no-op on the CPU device.
void flush_l2(at::Device d, void* stream);

// A fixed piece of device-only work on `stream` (the L2 eviction's write of twice the L2,
// then a chain of multiply-adds on every SM), for a judge to time: the host takes no part
// in its time, so it moves only where other work shares the GPU. No-op on the CPU device.
void probe(at::Device d, void* stream);

// A barrier of every rank through the heap's signal pads on `channel`: a one-block kernel
// on `stream` (CUDA heaps; returns once enqueued) or a spin on the host.
void heap_barrier(const heap::Heap& h, int channel, void* stream = nullptr);

// Stream-ordered 32-bit flags in device memory that another process maps as well: how a
// judge rank and its candidate rank order each other's streams without the host in
// between (jobs/gate.hpp). write_flag stores `value` once the stream's earlier work is
// done and visible; wait_flag holds the stream until the flag is >= `value` (a semaphore
// wait in the GPU's front end: it takes no SM, and the flag may be written from another
// process). CUDA device only.
void write_flag(void* stream, uint32_t* flag, uint32_t value);
void wait_flag(void* stream, uint32_t* flag, uint32_t value);

// What of this process the reference's calls run under that code in it could change, and
// so slow them: torch's math settings and CPU threads, and (CUDA) the L2 set aside for
// persisting accesses, the cache configuration and the scheduling flags; by name, as text. Compared before a candidate
// is loaded and after its timed calls (eval_candidate).
std::map<std::string, std::string> process_state(at::Device d);
// "name: before -> after; ..." for every entry that differs, "" where none does.
std::string state_changes(const std::map<std::string, std::string>& before, const std::map<std::string, std::string>& after);

struct Clocks {
  int sm_mhz = 0, max_sm_mhz = 0;
  unsigned long long throttle_reasons = 0;  // NVML clocks-event reasons
  bool throttled = false;                   // thermal or hardware slowdown
};
Clocks read_clocks(at::Device d);

// What torch's allocator holds on the device: its peak since the last reset (bytes
// allocated to tensors), and giving cached blocks back to the driver so another process on
// the GPU can have them. Nothing on the CPU device (0).
uint64_t peak_allocated(at::Device d);
void reset_peak(at::Device d);
void release_cached_memory(at::Device d);

// `bytes` from `src` to `dst`, both in `d`'s memory: on torch's current stream on a GPU, at
// once on the CPU (host memory, even in a CUDA run): one raw copy, where a copy_ costs the
// host several microseconds more a call.
void copy_bytes(at::Device d, void* dst, const void* src, size_t bytes);

// The GPUs as CUDA sees them, as JSON (see probe.hpp).
std::string probe_json();

}  // namespace pkb::device
