// pkb's buffers of one candidate rank as tensors, over the regions eval::HarnessLayout lays
// out: the set the candidate is called on (inputs and outputs) and the capture slots its
// outputs are copied into as calls end. A candidate rank views its own memory so; its
// judge rank views the same memory through a mapping. Also what both sides need to turn
// a call's captured outputs into the tensors it reported (dynamic dims).
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
  const std::vector<at::Tensor>& capture(int k) const { return captures_.at(k); }
  int captures() const { return static_cast<int>(captures_.size()); }

 private:
  std::vector<std::vector<at::Tensor>> captures_;
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
