// Hardware profiles (hardware/profiles.toml): per-GPU limits a problem's roofline is
// measured against, and the profile that matches a machine.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace pkb::spec {

struct HardwareProfile {
  std::string name, description, match;
  int gpus = 0;
  double nvlink_gbps = 0, hbm_gbps = 0, hbm_gb = 0, l2_mb = 0;
  std::map<std::string, double> tflops;  // by dtype: bf16, fp16, fp8, fp32, fp64
  // The fraction of the roofline bound a reference typically reaches here: what pkb's
  // estimate of a run's length divides the bound by (never a limit on anything).
  double typical_fraction = 0.2;

  // The dense rate for arithmetic in `dtype` (spec names; fp8_* -> fp8, complex -> fp32/64).
  double tflops_for(const std::string& dtype) const;
};

// Throws SpecError with file:line on malformed files.
std::vector<HardwareProfile> load_profiles(const std::string& path);

// The profile for a GPU named `gpu_name` (or "cpu" for the CPU device) with `gpus`
// visible: `match` in the name, the same GPU count preferred, else the largest node.
// nullptr when none matches.
const HardwareProfile* pick_profile(const std::vector<HardwareProfile>& profiles, const std::string& gpu_name,
                                    int gpus);

const HardwareProfile* find_profile(const std::vector<HardwareProfile>& profiles, const std::string& name);

// "no hardware profile 'h100' in hardware/profiles.toml (did you mean h100_8?); the profiles
// are a100_8, h100_8, ...": for a name find_profile does not know.
std::string unknown_profile_message(const std::vector<HardwareProfile>& profiles, const std::string& name);

}  // namespace pkb::spec
