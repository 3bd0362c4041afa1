#include "gen/hardware.hpp"
#include "io/text.hpp"

#include <cstdio>

namespace pkb::gen {

namespace {

std::string short_number(double v) { return io::format("%g", v); }

}  // namespace

std::map<std::string, std::string> profile_values(const spec::HardwareProfile& p) {
  std::map<std::string, std::string> v = {{"hw_name", p.name},
                                          {"hw_description", p.description},
                                          {"hw_gpus", std::to_string(p.gpus)},
                                          {"hw_nvlink_gbps", short_number(p.nvlink_gbps)},
                                          {"hw_hbm_gbps", short_number(p.hbm_gbps)},
                                          {"hw_hbm_gb", short_number(p.hbm_gb)},
                                          {"hw_l2_mb", short_number(p.l2_mb)}};
  for (auto& [dtype, rate] : p.tflops) v["hw_" + dtype + "_tflops"] = short_number(rate);
  return v;
}

std::set<std::string> profile_placeholders(const std::vector<spec::HardwareProfile>& profiles) {
  std::set<std::string> names = {"hw_detected"};
  spec::HardwareProfile empty;
  for (auto& [k, v] : profile_values(empty)) names.insert(k);
  for (auto& p : profiles)
    for (auto& [k, v] : profile_values(p)) names.insert(k);
  return names;
}

std::string describe_devices(const nlohmann::json& probe) {
  auto devs = probe.value("devices", nlohmann::json::array());
  if (devs.empty()) return "";
  const auto& d = devs[0];
  auto cc = d.value("cc", nlohmann::json::array({0, 0}));
  char buf[512];
  snprintf(buf, sizeof buf, "%zu x %s (sm_%d%d, %d SMs, %.0f GiB, L2 %.0f MiB, %d NVLinks per GPU)", devs.size(),
           d.value("name", std::string("?")).c_str(), cc[0].get<int>(), cc[1].get<int>(), d.value("sm_count", 0),
           d.value("memory_bytes", 0.0) / (1 << 30), d.value("l2_bytes", 0.0) / (1 << 20), d.value("nvlinks", 0));
  std::string s = std::string("pkb doctor sees ") + buf;
  if (devs.size() > 1 && probe.contains("p2p")) {
    bool all = true;
    for (size_t a = 0; a < devs.size(); ++a)
      for (size_t b = 0; b < devs.size(); ++b)
        if (a != b && !probe["p2p"][a][b].get<bool>()) all = false;
    s += all ? ", with peer access between every pair" : ", without peer access between some pairs";
  }
  return s + ".";
}

}  // namespace pkb::gen
