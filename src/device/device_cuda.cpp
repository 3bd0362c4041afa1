// The device layer with the CUDA device built in (the CPU device works as well).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "device/device.hpp"
#include "heap/heap.hpp"
#include "pkb/host.hpp"

namespace pkb::device {

cudaError_t launch_barrier(uint32_t* const* pads, int rank, int world, int channel, cudaStream_t stream);

namespace {

void check(cudaError_t r, const char* what) {
  if (r != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(r));
}

// NVLink state through NVML, loaded at run time (absent on machines without a driver).
struct Nvml {
  using Init = int (*)();
  using ByIndex = int (*)(unsigned, void**);
  using ByPci = int (*)(const char*, void**);
  using LinkState = int (*)(void*, unsigned, int*);
  ByPci by_pci = nullptr;
  LinkState link_state = nullptr;
  bool ok = false;
  Nvml() {
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    auto init = reinterpret_cast<Init>(dlsym(h, "nvmlInit_v2"));
    by_pci = reinterpret_cast<ByPci>(dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2"));
    link_state = reinterpret_cast<LinkState>(dlsym(h, "nvmlDeviceGetNvLinkState"));
    ok = init && by_pci && link_state && init() == 0;
  }
  int active_links(const std::string& pci) const {
    if (!ok) return -1;
    void* dev = nullptr;
    if (by_pci(pci.c_str(), &dev) != 0) return -1;
    int active = 0;
    for (unsigned l = 0; l < 18; ++l) {
      int state = 0;
      if (link_state(dev, l, &state) == 0 && state == 1) ++active;
    }
    return active;
  }
};

}  // namespace

bool cuda_built() { return true; }

void select(at::Device d) {
  if (d.is_cuda()) check(cudaSetDevice(d.index()), "cudaSetDevice");
}

void synchronize(at::Device d) {
  if (d.is_cuda()) check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

at::Generator generator(at::Device d, uint64_t seed) {
  if (d.is_cpu()) return at::detail::createCPUGenerator(seed);
  at::Generator g = at::cuda::detail::createCUDAGenerator(d.index());
  g.set_current_seed(seed);
  return g;
}

void heap_barrier(const heap::Heap& h, int channel) {
  if (!h.on_device()) return host::barrier(h.pads().data(), h.rank(), h.world(), channel);
  check(launch_barrier(h.pads_for_kernels(), h.rank(), h.world(), channel, c10::cuda::getCurrentCUDAStream().stream()),
        "device barrier launch");
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
  Nvml nvml;
  j["devices"] = nlohmann::json::array();
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    cudaGetDeviceProperties(&p, i);
    char pci[32] = {0};
    cudaDeviceGetPCIBusId(pci, sizeof(pci), i);
    int multicast = 0;
    cudaDeviceGetAttribute(&multicast, static_cast<cudaDeviceAttr>(132 /* cudaDevAttrMulticastSupported */), i);
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
