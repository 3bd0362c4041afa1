#include "tensor/save.hpp"

#include "tensor/pickle.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace pkb::tensor {

void save_outputs(const std::string& path, const std::vector<at::Tensor>& outputs) {
  std::vector<std::pair<std::string, at::Tensor>> named;
  for (size_t i = 0; i < outputs.size(); ++i) named.emplace_back("output_" + std::to_string(i), outputs[i]);
  write_pt(path, named, outputs.size() != 1);
}

void save_named(const std::string& path, const std::vector<std::string>& names, const std::vector<at::Tensor>& tensors) {
  std::vector<std::pair<std::string, at::Tensor>> named;
  for (size_t i = 0; i < tensors.size(); ++i) named.emplace_back(names.at(i), tensors[i]);
  write_pt(path, named, true);
}

std::vector<std::pair<std::string, at::Tensor>> load_saved(const std::string& path) {
  auto out = read_pt(path);
  auto order = [](const std::string& k) {  // output_10 after output_9
    return k.rfind("output_", 0) == 0 ? std::make_pair(std::stol(k.substr(7)), std::string()) : std::make_pair(-1L, k);
  };
  std::sort(out.begin(), out.end(), [&](auto& a, auto& b) { return order(a.first) < order(b.first); });
  return out;
}

}  // namespace pkb::tensor
