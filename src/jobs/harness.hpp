// pkb's buffers of one candidate rank as tensors, over the regions eval::HarnessLayout lays
// out: the set the candidate is called on (inputs and outputs). A candidate rank views its
// own memory so; its judge rank views the same memory through a mapping, and copies each
// call's outputs into captures of its own (memory the candidate rank never maps). Also
// what both sides need to turn a call's outputs into the tensors it reported (dynamic dims).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/layout.hpp"
#include "spec/spec.hpp"

namespace pkb::jobs {

class Harness {
 public:
  // `device_base` and `host_base`: the starts of the two regions in this process; tensors
  // of this rank's shapes (`vars`), host ones on the CPU.
  Harness(const spec::ProblemSpec& spec, const spec::Vars& vars, at::ScalarType dt, const eval::HarnessLayout& layout,
          char* device_base, char* host_base, at::Device device);

  std::vector<at::Tensor> in, out;  // the set
};

// A judge rank's copies of its candidate rank's outputs, `count` calls' worth, in the
// judge's own memory (device tensors on `device`, host ones on the host), shaped like `out`.
class Captures {
 public:
  Captures(const std::vector<at::Tensor>& out, int count, at::Device device);
  const std::vector<at::Tensor>& operator[](int k) const { return slots_.at(k); }
  int count() const { return static_cast<int>(slots_.size()); }

 private:
  std::vector<std::vector<at::Tensor>> slots_;
};

// The sizes a call reported for its outputs' dims (pkb_tensor::sizes after the call), one
// list per output.
using ReportedSizes = std::vector<std::vector<int64_t>>;

// `full` (outputs at their declared capacity) narrowed to the sizes a call reported; an
// error message when a reported size does not fit (not a data-dependent dim, negative, or
// over the capacity), else "".
std::string narrow_to_reported(const spec::ProblemSpec& spec, const std::vector<at::Tensor>& full,
                               const ReportedSizes& sizes, std::vector<at::Tensor>& outs, std::string& output);

}  // namespace pkb::jobs
