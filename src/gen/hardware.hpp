// Hardware as prompts quote it: a profile of hardware/profiles.toml (spec/hardware.hpp) as
// template values, and what `pkb doctor` sees in one sentence.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/hardware.hpp"

namespace pkb::gen {

// hw_name, hw_description, hw_gpus, hw_nvlink_gbps, hw_hbm_gbps, hw_hbm_gb, hw_l2_mb and
// hw_<dtype>_tflops for each rate the profile gives.
std::map<std::string, std::string> profile_values(const spec::HardwareProfile& p);

// Every name profile_values() gives for some profile, and hw_detected.
std::set<std::string> profile_placeholders(const std::vector<spec::HardwareProfile>& profiles);

// One sentence about the devices in a `pkb doctor --json` probe: count, name, SMs, memory,
// NVLinks, peer access. "" when it lists none.
std::string describe_devices(const nlohmann::json& probe);

}  // namespace pkb::gen
