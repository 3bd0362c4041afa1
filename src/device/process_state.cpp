// The process state the reference's calls run under (device/device.hpp): torch's math
// settings, its CPU threads and, in a CUDA build on a CUDA device, the L2 set aside for
// persisting accesses, the cache configuration and the scheduling flags. Any of them a candidate changes (an L2 set
// aside for persisting accesses, TF32 turned off, one CPU thread) slows the reference
// beside it, which the judges then hold to its baseline.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "device/device.hpp"

#ifdef PKB_CUDA
#include <cuda_runtime.h>
#endif

namespace pkb::device {

std::map<std::string, std::string> process_state(at::Device d) {
  auto& ctx = at::globalContext();
  auto flag = [](bool b) { return std::string(b ? "on" : "off"); };
  std::map<std::string, std::string> s = {
      {"torch tf32 cublas", flag(ctx.allowTF32CuBLAS())},
      {"torch tf32 cudnn", flag(ctx.allowTF32CuDNN())},
      {"torch float32 matmul precision", std::to_string(static_cast<int>(ctx.float32MatmulPrecision()))},
      {"torch fp16 reduction cublas", std::to_string(static_cast<int>(ctx.allowFP16ReductionCuBLAS()))},
      {"torch bf16 reduction cublas", std::to_string(static_cast<int>(ctx.allowBF16ReductionCuBLAS()))},
      {"torch deterministic algorithms", flag(ctx.deterministicAlgorithms())},
      {"torch cudnn", flag(ctx.userEnabledCuDNN())},
      {"torch cudnn benchmark", flag(ctx.benchmarkCuDNN())},
      {"torch cpu threads", std::to_string(at::get_num_threads())},
  };
#ifdef PKB_CUDA
  if (d.is_cuda()) {
    auto limit = [&](const char* name, cudaLimit l) {
      size_t v = 0;
      if (cudaDeviceGetLimit(&v, l) == cudaSuccess) s[name] = std::to_string(v);
    };
    // Not the stack size: the driver raises it itself for a kernel that needs more.
    limit("cuda persisting L2 bytes", cudaLimitPersistingL2CacheSize);
    cudaFuncCache cache;
    if (cudaDeviceGetCacheConfig(&cache) == cudaSuccess) s["cuda cache config"] = std::to_string(static_cast<int>(cache));
    unsigned flags = 0;
    if (cudaGetDeviceFlags(&flags) == cudaSuccess) s["cuda device flags"] = std::to_string(flags);
  }
#else
  (void)d;
#endif
  return s;
}

std::string state_changes(const std::map<std::string, std::string>& before, const std::map<std::string, std::string>& after) {
  std::string out;
  for (auto& [name, was] : before) {
    auto it = after.find(name);
    if (it == after.end() || it->second == was) continue;
    out += (out.empty() ? "" : "; ") + name + ": " + was + " -> " + it->second;
  }
  return out;
}

}  // namespace pkb::device
