#include "jobs/harness.hpp"

#include <ATen/ATen.h>

#include "tensor/dtypes.hpp"
#include "tensor/init.hpp"

namespace pkb::jobs {

Harness::Harness(const spec::ProblemSpec& s, const spec::Vars& vars, at::ScalarType dt,
                 const eval::HarnessLayout& l, char* device_base, char* host_base, at::Device device) {
  auto view = [&](const spec::TensorSpec& t, size_t offset, bool host) {
    char* base = host ? host_base : device_base;
    return tensor::view_of(base + offset, spec::shape_of(t, vars), tensor::resolve(t.dtype, dt),
                           host ? at::Device(at::kCPU) : device);
  };
  for (size_t i = 0; i < s.inputs.size(); ++i) in.push_back(view(s.inputs[i], l.in[i].offset, l.in[i].host));
  for (size_t i = 0; i < s.outputs.size(); ++i) out.push_back(view(s.outputs[i], l.out[i].offset, l.out[i].host));
}

Captures::Captures(const std::vector<at::Tensor>& out, int count, at::Device device) {
  for (int k = 0; k < count; ++k) {
    std::vector<at::Tensor> c;
    for (auto& y : out) c.push_back(at::empty(y.sizes(), y.options().device(y.is_cpu() ? at::Device(at::kCPU) : device)));
    slots_.push_back(std::move(c));
  }
}

std::string narrow_to_reported(const spec::ProblemSpec& s, const std::vector<at::Tensor>& full,
                               const ReportedSizes& sizes, std::vector<at::Tensor>& outs, std::string& output) {
  outs.clear();
  for (size_t i = 0; i < full.size(); ++i) {
    at::Tensor y = full[i];
    const std::vector<int64_t>& got = sizes.at(i);
    if (got.size() != static_cast<size_t>(y.dim())) {
      output = s.outputs[i].name;
      return "the call reported " + std::to_string(got.size()) + " dims for an output of " + std::to_string(y.dim());
    }
    for (int d = 0; d < y.dim(); ++d) {
      int64_t n = got[d];
      if (n == y.size(d)) continue;
      bool dynamic = s.outputs[i].shape[d].dynamic;
      if (!dynamic || n < 0 || n > y.size(d)) {
        output = s.outputs[i].name;
        return "the candidate reported size " + std::to_string(n) + " for dim " + std::to_string(d) + " (capacity " +
               std::to_string(y.size(d)) + (dynamic ? ")" : ", and the dim is not data-dependent)");
      }
      y = y.narrow(d, 0, n);
    }
    outs.push_back(y);
  }
  return "";
}

}  // namespace pkb::jobs
