// Statistics over timed calls, the roofline bound and bus bandwidth of a problem on a
// hardware profile. No torch here.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/hardware.hpp"
#include "spec/spec.hpp"

namespace pkb::eval {

struct Stats {
  double median = 0, mean = 0, min = 0, max = 0, iqr = 0, p25 = 0, p75 = 0;  // iqr = p75 - p25
  int samples = 0;
  nlohmann::json to_json() const;
  static Stats from_json(const nlohmann::json& j);
};

Stats stats_of(std::vector<double> us);

// A collective ends when its slowest rank ends: per call, the largest time over ranks.
std::vector<double> slowest_per_call(const std::vector<std::vector<double>>& per_rank);

struct Bound {
  double us = 0;         // the speed-of-light time: the largest of the three below
  std::string limiter;   // nvlink, hbm or flops
  double nvlink_us = 0, hbm_us = 0, flops_us = 0;
};

// Per-rank formulas evaluated for every rank; the slowest rank bounds the call. us == 0
// when the spec gives no roofline.
Bound roofline_bound(const spec::ProblemSpec& s, const std::string& size, int world, const std::string& dtype,
                     const spec::HardwareProfile& hw);

// What a call of the reference typically takes on `hw`, in seconds: the roofline bound over
// the fraction of it references typically reach there (hw.typical_fraction). An estimate
// for telling the user a run will be long, never a limit; 0 when the spec has no roofline.
double typical_call_s(const spec::ProblemSpec& s, const std::string& size, int world, const std::string& dtype,
                      const spec::HardwareProfile& hw);

// nccl-tests bus bandwidth in GB/s for a call of `us`; 0 when the spec has no bus factor.
double busbw_gbps(const spec::ProblemSpec& s, const std::string& size, int world, const std::string& dtype,
                  double us);

}  // namespace pkb::eval
