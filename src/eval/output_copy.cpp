#include "eval/output_copy.hpp"

#include <ATen/ATen.h>

#ifdef PKB_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "tensor/dtypes.hpp"

namespace pkb::eval {

namespace {

std::string shape_text(c10::IntArrayRef s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

// The output's buffer at its capacity, as the judge maps it: sizes and strides as described.
at::Tensor buffer(const pkb_tensor& o, int device) {
  std::vector<int64_t> sizes(o.sizes, o.sizes + o.ndim), strides(o.strides, o.strides + o.ndim);
  at::Device dev = o.on_host || device < 0 ? at::Device(at::kCPU) : at::Device(at::kCUDA, static_cast<int8_t>(device));
  auto type = tensor::to_aten(static_cast<spec::DType>(o.dtype));
  return at::from_blob(o.data, sizes, strides, at::TensorOptions().dtype(type).device(dev));
}

// Why `r` cannot be output `o`, or "".
std::string misfit(const at::Tensor& r, const pkb_tensor& o) {
  std::string name = std::string("output '") + o.name + "'";
  if (!r.defined()) return name + ": no tensor";
  auto want = tensor::to_aten(static_cast<spec::DType>(o.dtype));
  if (r.scalar_type() != want)
    return name + " is " + c10::toString(want) + ", the result is " + c10::toString(r.scalar_type());
  std::vector<int64_t> cap(o.sizes, o.sizes + o.ndim);
  bool fits = r.dim() == o.ndim;
  for (int d = 0; fits && d < o.ndim; ++d)
    fits = o.dynamic[d] ? r.size(d) <= cap[d] : r.size(d) == cap[d];
  if (!fits) {
    bool dynamic = false;
    for (int d = 0; d < o.ndim; ++d) dynamic = dynamic || o.dynamic[d];
    return name + " has shape " + shape_text(cap) + (dynamic ? " (data-dependent dims at most that)" : "") +
           ", the result " + shape_text(r.sizes());
  }
  return "";
}

}  // namespace

std::string copy_results(const std::vector<at::Tensor>& results, std::vector<pkb_tensor>& outputs, int device,
                         void* stream) {
  if (results.size() != outputs.size())
    return std::to_string(results.size()) + " results for " + std::to_string(outputs.size()) + " outputs";
  for (size_t i = 0; i < results.size(); ++i) {
    std::string why = misfit(results[i], outputs[i]);
    if (!why.empty()) return why;
  }
#ifdef PKB_CUDA
  std::optional<c10::cuda::CUDAStreamGuard> guard;
  if (device >= 0)
    guard.emplace(c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream), static_cast<int8_t>(device)));
#else
  (void)stream;
#endif
  for (size_t i = 0; i < results.size(); ++i) {
    pkb_tensor& o = outputs[i];
    at::Tensor dst = buffer(o, device);
    for (int d = 0; d < o.ndim; ++d)
      if (o.dynamic[d]) {
        dst = dst.narrow(d, 0, results[i].size(d));
        o.sizes[d] = results[i].size(d);
      }
    // Same device: one kernel on the stream. From host to device or back (a host output, a
    // result left on the CPU): copy_ orders it on the current stream, which is `stream`.
    dst.copy_(results[i], /*non_blocking=*/false);
  }
  return "";
}

void use_stream(int device, void* stream) {
#ifdef PKB_CUDA
  if (device >= 0)
    c10::cuda::setCurrentCUDAStream(
        c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream), static_cast<int8_t>(device)));
#else
  (void)device;
  (void)stream;
#endif
}

}  // namespace pkb::eval
