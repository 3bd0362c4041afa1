// Saved tensors load with plain torch.load in Python (weights_only=True), fp8 included: a
// single output as a tensor, several as a dict output_0..k (as the original did), inputs as
// a dict by name (pickle.hpp writes the format).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace pkb::tensor {

void save_outputs(const std::string& path, const std::vector<at::Tensor>& outputs);
void save_named(const std::string& path, const std::vector<std::string>& names, const std::vector<at::Tensor>& tensors);

// Reads what save_outputs or save_named wrote (pkb compare): (name, tensor) pairs, a
// single tensor named "", output_0..k in order, other dicts sorted by name.
std::vector<std::pair<std::string, at::Tensor>> load_saved(const std::string& path);

}  // namespace pkb::tensor
