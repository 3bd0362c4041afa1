#include "tensor/save.hpp"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace pkb::tensor {

namespace {

// torch::jit::pickle_save, but without type tags on dicts: torch.load(weights_only=True)
// refuses the torch.jit._pickle.restore_type_tag global those tags call.
void write(const std::string& path, const c10::IValue& v) {
  std::vector<char> pickled;
  torch::jit::Pickler pickler([&](const char* b, size_t n) { pickled.insert(pickled.end(), b, b + n); }, nullptr,
                              nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(v);
  pickler.stop();
  std::ofstream f(path, std::ios::binary);
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* b, size_t n) {
    f.write(static_cast<const char*>(b), static_cast<std::streamsize>(n));
    return n;
  });
  torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

void save_outputs(const std::string& path, const std::vector<at::Tensor>& outputs) {
  if (outputs.size() == 1) return write(path, outputs[0].cpu());
  std::vector<std::string> names;
  for (size_t i = 0; i < outputs.size(); ++i) names.push_back("output_" + std::to_string(i));
  save_named(path, names, outputs);
}

void save_named(const std::string& path, const std::vector<std::string>& names, const std::vector<at::Tensor>& tensors) {
  c10::Dict<std::string, at::Tensor> d;
  for (size_t i = 0; i < tensors.size(); ++i) d.insert(names.at(i), tensors[i].cpu());
  write(path, d);
}

std::vector<std::pair<std::string, at::Tensor>> load_saved(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  c10::IValue v = torch::jit::pickle_load(bytes);
  if (v.isTensor()) return {{"", v.toTensor()}};
  if (!v.isGenericDict()) throw std::runtime_error(path + " holds neither a tensor nor a dict of tensors");
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (auto& kv : v.toGenericDict()) out.emplace_back(kv.key().toStringRef(), kv.value().toTensor());
  auto order = [](const std::string& k) {  // output_10 after output_9
    return k.rfind("output_", 0) == 0 ? std::make_pair(std::stol(k.substr(7)), std::string()) : std::make_pair(-1L, k);
  };
  std::sort(out.begin(), out.end(), [&](auto& a, auto& b) { return order(a.first) < order(b.first); });
  return out;
}

}  // namespace pkb::tensor
