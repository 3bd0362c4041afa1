#include "eval/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pkb::eval {

nlohmann::json Stats::to_json() const {
  return {{"median_us", median}, {"mean_us", mean}, {"min_us", min}, {"max_us", max}, {"iqr_us", iqr},
          {"p25_us", p25}, {"p75_us", p75}, {"samples", samples}};
}

Stats Stats::from_json(const nlohmann::json& j) {
  Stats s;
  s.median = j.at("median_us");
  s.mean = j.at("mean_us");
  s.min = j.at("min_us");
  s.max = j.at("max_us");
  s.iqr = j.at("iqr_us");
  // Cached reference timings written before the quartiles were recorded: about the median.
  s.p25 = j.value("p25_us", s.median - s.iqr / 2);
  s.p75 = j.value("p75_us", s.median + s.iqr / 2);
  s.samples = j.at("samples");
  return s;
}

namespace {
// Linear interpolation between order statistics (numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * (sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos)), hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}
}  // namespace

Stats stats_of(std::vector<double> us) {
  Stats s;
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  s.samples = static_cast<int>(us.size());
  s.median = quantile(us, 0.5);
  s.mean = std::accumulate(us.begin(), us.end(), 0.0) / us.size();
  s.min = us.front();
  s.max = us.back();
  s.p25 = quantile(us, 0.25);
  s.p75 = quantile(us, 0.75);
  s.iqr = s.p75 - s.p25;
  return s;
}

std::vector<double> slowest_per_call(const std::vector<std::vector<double>>& per_rank) {
  std::vector<double> out;
  for (auto& rank : per_rank) {
    if (out.size() < rank.size()) out.resize(rank.size(), 0);
    for (size_t i = 0; i < rank.size(); ++i) out[i] = std::max(out[i], rank[i]);
  }
  return out;
}

Bound roofline_bound(const spec::ProblemSpec& s, const std::string& size, int world, const std::string& dtype,
                     const spec::HardwareProfile& hw) {
  Bound b;
  const auto& r = s.roofline;
  if (r.nvlink_bytes.empty() && r.hbm_bytes.empty() && r.flops.empty()) return b;
  for (int q = 0; q < world; ++q) {
    spec::Vars v = s.roofline_vars(size, world, q, dtype);
    if (!r.nvlink_bytes.empty() && world > 1) b.nvlink_us = std::max(b.nvlink_us, r.nvlink_bytes.eval(v) / (hw.nvlink_gbps * 1e3));
    if (!r.hbm_bytes.empty()) b.hbm_us = std::max(b.hbm_us, r.hbm_bytes.eval(v) / (hw.hbm_gbps * 1e3));
    double rate = hw.tflops_for(dtype);
    if (!r.flops.empty() && rate > 0) b.flops_us = std::max(b.flops_us, r.flops.eval(v) / (rate * 1e6));
  }
  b.us = std::max({b.nvlink_us, b.hbm_us, b.flops_us});
  b.limiter = b.us == b.nvlink_us ? "nvlink" : b.us == b.hbm_us ? "hbm" : "flops";
  return b;
}

double typical_call_s(const spec::ProblemSpec& s, const std::string& size, int world, const std::string& dtype,
                      const spec::HardwareProfile& hw) {
  return roofline_bound(s, size, world, dtype, hw).us * 1e-6 / hw.typical_fraction;
}

double busbw_gbps(const spec::ProblemSpec& s, const std::string& size, int world, const std::string& dtype,
                  double us) {
  if (s.roofline.bus_factor.empty() || us <= 0) return 0;
  spec::Vars v = s.roofline_vars(size, world, 0, dtype);
  return s.roofline.data_bytes.eval(v) / (us * 1e3) * s.roofline.bus_factor.eval(v);
}

}  // namespace pkb::eval
