#include "spec/hardware.hpp"

#include "spec/toml.hpp"

#include <sstream>

#include "spec/spec.hpp"

namespace pkb::spec {

double HardwareProfile::tflops_for(const std::string& dtype) const {
  std::string key = dtype;
  if (dtype.rfind("fp8", 0) == 0) key = "fp8";
  else if (dtype == "complex64") key = "fp32";
  else if (dtype == "complex128") key = "fp64";
  else if (tflops.count(dtype) == 0) key = "fp32";  // integer work runs at about the fp32 rate
  auto it = tflops.find(key);
  return it == tflops.end() ? 0 : it->second;
}

std::vector<HardwareProfile> load_profiles(const std::string& path) {
  toml::table root = parse_toml(path);
  std::vector<HardwareProfile> out;
  for (auto&& [name, node] : root) {
    const toml::table* t = node.as_table();
    auto fail = [&](const std::string& what) {
      throw SpecError(path + ":" + std::to_string(node.source().begin.line) + ": profile " + std::string(name.str()) +
                      ": " + what);
    };
    if (!t) fail("must be a table");
    HardwareProfile p;
    p.name = std::string(name.str());
    for (auto&& [k, v] : *t) {
      std::string key(k.str());
      if (key == "description") p.description = v.value_or(std::string());
      else if (key == "match") p.match = v.value_or(std::string());
      else if (key == "gpus") p.gpus = v.value_or(0);
      else if (key == "nvlink_gbps") p.nvlink_gbps = v.value_or(0.0);
      else if (key == "hbm_gbps") p.hbm_gbps = v.value_or(0.0);
      else if (key == "hbm_gb") p.hbm_gb = v.value_or(0.0);
      else if (key == "l2_mb") p.l2_mb = v.value_or(0.0);
      else if (key.size() > 7 && key.compare(key.size() - 7, 7, "_tflops") == 0) p.tflops[key.substr(0, key.size() - 7)] = v.value_or(0.0);
      else fail("unknown key '" + key + "'");
    }
    if (p.match.empty() || p.hbm_gbps <= 0 || p.nvlink_gbps <= 0 || p.tflops.empty())
      fail("needs match, nvlink_gbps, hbm_gbps and *_tflops");
    out.push_back(p);
  }
  return out;
}

const HardwareProfile* pick_profile(const std::vector<HardwareProfile>& profiles, const std::string& gpu_name,
                                    int gpus) {
  const HardwareProfile* best = nullptr;
  for (auto& p : profiles) {
    if (gpu_name.find(p.match) == std::string::npos) continue;
    if (!best || (p.gpus == gpus && best->gpus != gpus) || (best->gpus != gpus && p.gpus > best->gpus)) best = &p;
  }
  return best;
}

const HardwareProfile* find_profile(const std::vector<HardwareProfile>& profiles, const std::string& name) {
  for (auto& p : profiles)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace pkb::spec
