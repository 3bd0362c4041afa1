// The device layer with the CUDA device built in (the CPU device works as well).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "device/device.hpp"
#include "device/host_timer.hpp"
#include "heap/heap.hpp"
#include "pkb/host.hpp"

namespace pkb::device {

cudaError_t launch_barrier(uint32_t* const* pads, int rank, int world, int channel, cudaStream_t stream);
cudaError_t launch_probe(float* sink, int sms, cudaStream_t stream);

namespace {

void check(cudaError_t r, const char* what) {
  if (r != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(r));
}

// NVML, loaded at run time (absent on machines without a driver): NVLink state for the
// probe, clocks for timing.
struct Nvml {
  using Init = int (*)();
  using ByPci = int (*)(const char*, void**);
  using LinkState = int (*)(void*, unsigned, int*);
  using Clock = int (*)(void*, int, unsigned*);
  using Reasons = int (*)(void*, unsigned long long*);
  ByPci by_pci = nullptr;
  LinkState link_state = nullptr;
  Clock clock = nullptr, max_clock = nullptr;
  Reasons reasons = nullptr;
  bool ok = false;
  static const Nvml& get() {
    static Nvml n;
    return n;
  }
  Nvml() {
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    auto init = reinterpret_cast<Init>(dlsym(h, "nvmlInit_v2"));
    by_pci = reinterpret_cast<ByPci>(dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2"));
    link_state = reinterpret_cast<LinkState>(dlsym(h, "nvmlDeviceGetNvLinkState"));
    clock = reinterpret_cast<Clock>(dlsym(h, "nvmlDeviceGetClockInfo"));
    max_clock = reinterpret_cast<Clock>(dlsym(h, "nvmlDeviceGetMaxClockInfo"));
    reasons = reinterpret_cast<Reasons>(dlsym(h, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!reasons) reasons = reinterpret_cast<Reasons>(dlsym(h, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    ok = init && by_pci && init() == 0;
  }
  void* device(const std::string& pci) const {
    void* dev = nullptr;
    return ok && by_pci(pci.c_str(), &dev) == 0 ? dev : nullptr;
  }
  int active_links(const std::string& pci) const {
    void* dev = device(pci);
    if (!dev || !link_state) return -1;
    int active = 0;
    for (unsigned l = 0; l < 18; ++l) {
      int state = 0;
      if (link_state(dev, l, &state) == 0 && state == 1) ++active;
    }
    return active;
  }
};

std::string pci_id(int device) {
  char pci[32] = {0};
  cudaDeviceGetPCIBusId(pci, sizeof(pci), device);
  return pci;
}

class EventTimer : public CallTimer {
 public:
  EventTimer(void* stream, int n) : stream_(static_cast<cudaStream_t>(stream)), events_(2 * n) {
    for (auto& e : events_) check(cudaEventCreate(&e), "cudaEventCreate");
  }
  ~EventTimer() override {
    for (auto& e : events_) cudaEventDestroy(e);
  }
  void start(int i) override { check(cudaEventRecord(events_[2 * i], stream_), "cudaEventRecord"); }
  void stop(int i) override {
    check(cudaEventRecord(events_[2 * i + 1], stream_), "cudaEventRecord");
    stopped_ = std::max(stopped_, static_cast<size_t>(i) + 1);
  }
  // The calls timed (0 for any slot after the last one stopped: a loop that ended early).
  std::vector<double> elapsed_us() override {
    check(cudaStreamSynchronize(stream_), "stream synchronize");
    std::vector<double> us(events_.size() / 2, 0.0);
    for (size_t i = 0; i < stopped_; ++i) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]), "cudaEventElapsedTime");
      us[i] = ms * 1000.0;
    }
    return us;
  }

 private:
  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
  size_t stopped_ = 0;
};

}  // namespace

bool cuda_built() { return true; }

void select(at::Device d) {
  if (!d.is_cuda()) return;
  check(cudaSetDevice(d.index()), "cudaSetDevice");
  // References are the yardstick: bf16/fp16 GEMMs accumulate in fp32 to the end (torch's
  // default lets cuBLAS reduce split-K partial sums in bf16), fp32 convolutions in fp32
  // (torch's default lets cuDNN use TF32). Candidates calling torch in the rank get the
  // same settings.
  at::globalContext().setAllowBF16ReductionCuBLAS(false);
  at::globalContext().setAllowFP16ReductionCuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setAllowTF32CuBLAS(false);
}

void synchronize(at::Device d) {
  if (!d.is_cuda()) return;
  check(cudaDeviceSynchronize(), "CUDA error");
  check(cudaGetLastError(), "CUDA error");
}

void* make_stream(at::Device d, bool current) {
  if (!d.is_cuda()) return nullptr;
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  if (current) c10::cuda::setCurrentCUDAStream(c10::cuda::getStreamFromExternal(s, d.index()));
  return s;
}

void destroy_stream(at::Device d, void* stream, bool current) {
  if (!d.is_cuda() || !stream) return;
  if (current) c10::cuda::setCurrentCUDAStream(c10::cuda::getDefaultCUDAStream(d.index()));
  cudaStreamDestroy(static_cast<cudaStream_t>(stream));
}

void sync_stream(at::Device d, void* stream) {
  if (d.is_cuda()) check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "CUDA error");
}

std::unique_ptr<CallTimer> make_timer(at::Device d, void* stream, int n) {
  if (d.is_cuda()) return std::make_unique<EventTimer>(stream, n);
  return std::make_unique<HostTimer>(n);
}

Joined capture_joined(at::Device d, void* stream, const std::function<void()>& call) {
  if (!d.is_cuda()) return Joined::unknown;
  auto s = static_cast<cudaStream_t>(stream);
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
    cudaGetLastError();
    return Joined::unknown;
  }
  call();
  cudaGraph_t graph = nullptr;
  cudaError_t e = cudaStreamEndCapture(s, &graph);
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();  // capture errors are not sticky; clear what the call left
  if (e == cudaErrorStreamCaptureUnjoined) return Joined::no;
  return e == cudaSuccess ? Joined::yes : Joined::unknown;
}

void flush_l2(at::Device d, void* stream) {
  if (!d.is_cuda()) return;
  static void* buf = nullptr;
  static size_t bytes = 0;
  if (!buf) {
    int l2 = 0;
    check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, d.index()), "L2 size");
    bytes = 2 * static_cast<size_t>(l2);
    check(cudaMalloc(&buf, bytes), "cudaMalloc");
  }
  check(cudaMemsetAsync(buf, 0x5a, bytes, static_cast<cudaStream_t>(stream)), "L2 flush");
}

void probe(at::Device d, void* stream) {
  if (!d.is_cuda()) return;
  static float* sink = nullptr;
  static int sms = 0;
  if (!sink) {
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d.index()), "SM count");
    check(cudaMalloc(&sink, sizeof(float)), "cudaMalloc");
  }
  flush_l2(d, stream);
  check(launch_probe(sink, sms, static_cast<cudaStream_t>(stream)), "probe launch");
}

namespace {

// The stream memory operations, from the driver (the runtime has no wrapper for them).
struct StreamOps {
  decltype(&cuStreamWriteValue32_v2) write = nullptr;
  decltype(&cuStreamWaitValue32_v2) wait = nullptr;
  static const StreamOps& get() {
    static StreamOps ops = [] {
      StreamOps o;
      cudaDriverEntryPointQueryResult status;
      void* p = nullptr;
      if (cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &p, 12000, cudaEnableDefault, &status) == cudaSuccess)
        o.write = reinterpret_cast<decltype(o.write)>(p);
      p = nullptr;
      if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &p, 12000, cudaEnableDefault, &status) == cudaSuccess)
        o.wait = reinterpret_cast<decltype(o.wait)>(p);
      if (!o.write || !o.wait) throw std::runtime_error("the CUDA driver lacks stream memory operations (cuStreamWaitValue32)");
      return o;
    }();
    return ops;
  }
};

void check_cu(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + " failed: CUDA driver error " + std::to_string(r));
}

}  // namespace

void write_flag(void* stream, uint32_t* flag, uint32_t value) {
  check_cu(StreamOps::get().write(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(flag), value,
                                  CU_STREAM_WRITE_VALUE_DEFAULT),
           "cuStreamWriteValue32");
}

void wait_flag(void* stream, uint32_t* flag, uint32_t value) {
  check_cu(StreamOps::get().wait(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(flag), value,
                                 CU_STREAM_WAIT_VALUE_GEQ),
           "cuStreamWaitValue32");
}

Clocks read_clocks(at::Device d) {
  Clocks c;
  if (!d.is_cuda()) return c;
  const Nvml& n = Nvml::get();
  void* dev = n.device(pci_id(d.index()));
  if (!dev) return c;
  unsigned v = 0;
  if (n.clock && n.clock(dev, 1 /* NVML_CLOCK_SM */, &v) == 0) c.sm_mhz = static_cast<int>(v);
  if (n.max_clock && n.max_clock(dev, 1, &v) == 0) c.max_sm_mhz = static_cast<int>(v);
  if (n.reasons && n.reasons(dev, &c.throttle_reasons) == 0)
    // HW slowdown, SW thermal, HW thermal, HW power brake: the clock was pulled down.
    c.throttled = (c.throttle_reasons & (0x8ULL | 0x20ULL | 0x40ULL | 0x80ULL)) != 0;
  return c;
}

void copy_bytes(at::Device d, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (!d.is_cuda()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c10::cuda::getCurrentCUDAStream(d.index()).stream()),
        "cudaMemcpyAsync");
}

// torch's allocator is set up lazily, with the first CUDA tensor: its statistics need it.
static void init_allocator() { at::globalContext().lazyInitDevice(at::kCUDA); }

uint64_t peak_allocated(at::Device d) {
  if (!d.is_cuda()) return 0;
  init_allocator();
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(d.index());
  return static_cast<uint64_t>(stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak);
}

void reset_peak(at::Device d) {
  if (!d.is_cuda()) return;
  init_allocator();
  c10::cuda::CUDACachingAllocator::resetPeakStats(d.index());
}

void release_cached_memory(at::Device d) {
  if (!d.is_cuda()) return;
  init_allocator();
  check(cudaDeviceSynchronize(), "CUDA error");
  c10::cuda::CUDACachingAllocator::emptyCache();
}

at::Generator generator(at::Device d, uint64_t seed) {
  if (d.is_cpu()) return at::detail::createCPUGenerator(seed);
  at::Generator g = at::cuda::detail::createCUDAGenerator(d.index());
  g.set_current_seed(seed);
  return g;
}

void heap_barrier(const heap::Heap& h, int channel, void* stream) {
  if (!h.on_device()) return host::barrier(h.pads().data(), h.rank(), h.world(), channel);
  cudaStream_t s = stream ? static_cast<cudaStream_t>(stream) : c10::cuda::getCurrentCUDAStream().stream();
  check(launch_barrier(h.pads_for_kernels(), h.rank(), h.world(), channel, s), "device barrier launch");
}

std::string probe_json() {
  nlohmann::json j;
  j["cuda_built"] = true;
  int driver = 0, runtime = 0, nccl = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  ncclGetVersion(&nccl);
  j["driver_version"] = driver;
  j["runtime_version"] = runtime;
  j["nccl_version"] = nccl;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    j["error"] = cudaGetErrorString(e);
    n = 0;
  }
  const Nvml& nvml = Nvml::get();
  j["devices"] = nlohmann::json::array();
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    cudaGetDeviceProperties(&p, i);
    std::string pci = pci_id(i);
    int multicast = 0;
    // The runtime has no name for it; its attributes share the driver's numbering.
    cudaDeviceGetAttribute(&multicast, static_cast<cudaDeviceAttr>(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED), i);
    int clock_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, i);
    j["devices"].push_back({{"index", i},
                            {"name", p.name},
                            {"cc", {p.major, p.minor}},
                            {"memory_bytes", p.totalGlobalMem},
                            {"sm_count", p.multiProcessorCount},
                            {"l2_bytes", p.l2CacheSize},
                            {"max_clock_mhz", clock_khz / 1000},
                            {"pci_bus_id", pci},
                            {"nvlinks", nvml.active_links(pci)},
                            {"multicast_supported", multicast != 0}});
  }
  nlohmann::json p2p = nlohmann::json::array();
  for (int a = 0; a < n; ++a) {
    nlohmann::json row = nlohmann::json::array();
    for (int b = 0; b < n; ++b) {
      int can = a == b;
      if (a != b) cudaDeviceCanAccessPeer(&can, a, b);
      row.push_back(can != 0);
    }
    p2p.push_back(row);
  }
  j["p2p"] = p2p;
  return j.dump();
}

}  // namespace pkb::device
