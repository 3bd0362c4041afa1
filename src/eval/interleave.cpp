#include "eval/interleave.hpp"

#include <algorithm>
#include <cmath>

#include "eval/stats.hpp"

namespace pkb::eval::interleave {

const char* side_name(Side s) { return s == Side::reference ? "reference" : "candidate"; }

const char* stop_name(Stop s) {
  switch (s) {
    case Stop::go_on: return "go_on";
    case Stop::interval: return "interval";
    case Stop::rounds: return "rounds";
    case Stop::budget: return "budget";
  }
  return "?";
}

Plan plan(const Settings& s, double reference_s, double candidate_s) {
  // A call of each side per pair: as many pairs as the budget holds at the warm-ups' pace,
  // `calls` where it holds more, never under min_calls.
  double pair_s = std::max(reference_s, 0.0) + std::max(candidate_s, 0.0);
  int fit = pair_s > 0 ? static_cast<int>(std::min<double>(s.budget_s / pair_s, s.calls)) : s.calls;
  int n = std::max(std::min(s.calls, s.min_calls), fit);
  Plan p;
  // Five rounds at least, so that the interval has something to stand on.
  p.block = std::clamp(n / 5, 1, std::max(s.block, 1));
  auto even = [](int k) { return k + k % 2; };  // rounds come in pairs
  p.min_rounds = even((n + p.block - 1) / p.block);
  p.max_rounds = std::max(p.min_rounds, even((std::max(s.max_calls, n) + p.block - 1) / p.block));
  return p;
}

Side side_of(const Plan& p, int call) {
  int round = call / (2 * p.block), second = (call % (2 * p.block)) / p.block;
  bool candidate_first = round % 2 == 0;
  return (second == 0) == candidate_first ? Side::candidate : Side::reference;
}

bool ends_round(const Plan& p, int call) { return (call + 1) % (2 * p.block) == 0; }

double t95(int df) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return std::numeric_limits<double>::infinity();
  if (df <= 30) return table[df - 1];
  return 1.960 + 2.4 / df;  // within 0.002 of the quantile beyond 30
}

nlohmann::json Estimate::to_json() const {
  return {{"speedup", speedup}, {"lo", lo}, {"hi", hi}, {"rounds", rounds},
          {"half_width", std::isfinite(half_width) ? nlohmann::json(half_width) : nlohmann::json()}};
}

Estimate estimate(const std::vector<Round>& rounds) {
  std::vector<double> logs;
  for (auto& r : rounds) {
    double ref = stats_of(r.reference_us).median, cand = stats_of(r.candidate_us).median;
    if (ref > 0 && cand > 0) logs.push_back(std::log(ref / cand));
  }
  Estimate e;
  e.rounds = static_cast<int>(logs.size());
  if (logs.empty()) return e;
  double m = 0;
  for (double x : logs) m += x;
  m /= logs.size();
  e.speedup = e.lo = e.hi = std::exp(m);
  if (logs.size() < 2) return e;
  double ss = 0;
  for (double x : logs) ss += (x - m) * (x - m);
  double h = t95(e.rounds - 1) * std::sqrt(ss / (logs.size() - 1)) / std::sqrt(double(logs.size()));
  e.lo = std::exp(m - h);
  e.hi = std::exp(m + h);
  e.half_width = (e.hi - e.lo) / 2 / e.speedup;
  return e;
}

Stop decide(const Plan& p, const Settings& s, const std::vector<Round>& rounds, double elapsed_s) {
  int done = static_cast<int>(rounds.size());
  if (done < p.min_rounds || done % 2) return Stop::go_on;
  if (estimate(rounds).half_width <= s.target) return Stop::interval;
  if (done >= p.max_rounds) return Stop::rounds;
  if (elapsed_s >= s.budget_s) return Stop::budget;
  return Stop::go_on;
}

Cap cap(double baseline_median_us, double beside_median_us, double drift) {
  Cap c;
  if (baseline_median_us <= 0 || beside_median_us <= 0) return c;
  c.slower = beside_median_us / baseline_median_us - 1;
  c.factor = std::min(1.0, baseline_median_us * (1 + drift) / beside_median_us);
  return c;
}

}  // namespace pkb::eval::interleave
