// .pt files that plain torch.load reads (weights_only=True), and the reader pkb compare
// uses for them and for older torch.save files (see pickle.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace pkb::tensor {

// One tensor (as_dict false: the first entry), or a dict name -> tensor in the given order.
void write_pt(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors, bool as_dict);

// (name, tensor) pairs: a single tensor comes back named "". Throws std::runtime_error.
std::vector<std::pair<std::string, at::Tensor>> read_pt(const std::string& path);

}  // namespace pkb::tensor
