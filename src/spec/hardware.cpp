#include "spec/hardware.hpp"

#include "io/text.hpp"
#include "io/toml_reader.hpp"
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

namespace {

std::vector<HardwareProfile> read_profiles(const std::string& path) {
  io::TomlReader r(path);
  std::vector<HardwareProfile> out;
  for (auto&& [name, node] : r.doc()) {
    HardwareProfile p;
    p.name = std::string(name.str());
    std::string where = "profile " + p.name;
    const toml::table* t = node.as_table();
    if (!t) r.fail(node, where + " must be a table");
    for (auto&& [k, v] : *t) {
      std::string key(k.str());
      if (key == "description") p.description = r.str(v, where + " description");
      else if (key == "match") p.match = r.str(v, where + " match");
      else if (key == "gpus") p.gpus = static_cast<int>(r.integer(v, where + " gpus"));
      else if (key == "nvlink_gbps") p.nvlink_gbps = r.real(v, where + " nvlink_gbps");
      else if (key == "hbm_gbps") p.hbm_gbps = r.real(v, where + " hbm_gbps");
      else if (key == "hbm_gb") p.hbm_gb = r.real(v, where + " hbm_gb");
      else if (key == "l2_mb") p.l2_mb = r.real(v, where + " l2_mb");
      else if (key == "typical_fraction") p.typical_fraction = r.real(v, where + " typical_fraction");
      else if (key.size() > 7 && key.compare(key.size() - 7, 7, "_tflops") == 0)
        p.tflops[key.substr(0, key.size() - 7)] = r.real(v, where + " " + key);
      else r.fail(v, where + ": unknown key '" + key + "'");
    }
    if (p.match.empty() || p.hbm_gbps <= 0 || p.nvlink_gbps <= 0 || p.tflops.empty())
      r.fail(node, where + " needs match, nvlink_gbps, hbm_gbps and *_tflops");
    if (p.typical_fraction <= 0 || p.typical_fraction > 1) r.fail(node, where + " typical_fraction is a fraction: (0, 1]");
    out.push_back(p);
  }
  return out;
}

}  // namespace

std::vector<HardwareProfile> load_profiles(const std::string& path) {
  try {
    return read_profiles(path);
  } catch (const io::InputError& e) {
    throw SpecError(e.what());
  }
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

std::string unknown_profile_message(const std::vector<HardwareProfile>& profiles, const std::string& name) {
  std::vector<std::string> names;
  std::string list;
  for (auto& p : profiles) {
    names.push_back(p.name);
    list += (list.empty() ? "" : ", ") + p.name;
  }
  std::string near = io::nearest(name, names);
  return "no hardware profile '" + name + "' in hardware/profiles.toml" +
         (near.empty() ? "" : " (did you mean " + near + "?)") + "; the profiles are " + list;
}

}  // namespace pkb::spec
