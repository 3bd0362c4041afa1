#include "eval/interleave.hpp"

#include <algorithm>
#include <cmath>
#include <map>

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

nlohmann::json Estimate::to_json() const {
  return {{"speedup", speedup}, {"lo", lo}, {"hi", hi}, {"rounds", rounds},
          {"half_width", std::isfinite(half_width) ? nlohmann::json(half_width) : nlohmann::json()}};
}

namespace {

// The largest k with P(T < k) <= 2.5% for Wilcoxon's signed-rank statistic T of n values
// (0: none): the interval is then the k-th Walsh average from either end.
int signed_rank_k(int n) {
  static std::map<int, int> known;  // the judges ask at every round's end
  if (auto it = known.find(n); it != known.end()) return it->second;
  const double m = n * (n + 1) / 2.0;
  if (n > 200) {  // normal, with the continuity correction
    double sd = std::sqrt(n * (n + 1) * (2.0 * n + 1) / 24);
    return known[n] = std::max(0, static_cast<int>(std::floor(m / 2 - 1.959964 * sd + 0.5)));
  }
  // The exact distribution of T: each rank r in or out with probability 1/2.
  std::vector<double> p(static_cast<size_t>(m) + 1, 0.0);
  p[0] = 1;
  for (int r = 1; r <= n; ++r)
    for (int t = static_cast<int>(m); t >= 0; --t) p[t] = (p[t] + (t >= r ? p[t - r] : 0.0)) / 2;
  int k = 0;
  double below = 0;  // P(T < k)
  while (k <= m && below + p[k] <= 0.025) below += p[k++];
  return known[n] = k;
}

std::vector<double> log_ratios(const std::vector<Round>& rounds, double shift_us) {
  auto at = [&](const std::vector<double>& us) {
    std::vector<double> v;
    for (double x : us) v.push_back(std::max(x + shift_us, 1e-3));
    return stats_of(v).median;
  };
  std::vector<double> logs;
  for (auto& r : rounds) {
    if (r.reference_us.empty() || r.candidate_us.empty()) continue;
    double ref = at(r.reference_us), cand = at(r.candidate_us);
    if (ref > 0 && cand > 0) logs.push_back(std::log(ref / cand));
  }
  return logs;
}

}  // namespace

Location hodges_lehmann(const std::vector<double>& x) {
  Location l;
  const size_t n = x.size();
  if (n == 0) return l;
  std::vector<double> walsh;
  walsh.reserve(n * (n + 1) / 2);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i; j < n; ++j) walsh.push_back((x[i] + x[j]) / 2);
  std::sort(walsh.begin(), walsh.end());
  const size_t m = walsh.size();
  l.estimate = m % 2 ? walsh[m / 2] : (walsh[m / 2 - 1] + walsh[m / 2]) / 2;
  l.lo = l.hi = l.estimate;
  int k = signed_rank_k(static_cast<int>(n));
  if (k < 1) return l;
  l.lo = walsh[k - 1];
  l.hi = walsh[m - k];
  l.ok = true;
  return l;
}

Estimate estimate(const std::vector<Round>& rounds, double gate_us) {
  Estimate e;
  std::vector<double> logs = log_ratios(rounds, 0);
  e.rounds = static_cast<int>(logs.size());
  if (logs.empty()) return e;
  Location l = hodges_lehmann(logs);
  e.speedup = std::exp(l.estimate);
  e.lo = std::exp(l.lo);
  e.hi = std::exp(l.hi);
  if (!l.ok) return e;
  // What the gate's uncertainty could move: the same rounds with every call longer, shorter.
  if (gate_us > 0)
    for (double d : {gate_us, -gate_us}) {
      Location g = hodges_lehmann(log_ratios(rounds, d));
      e.lo = std::min(e.lo, std::exp(g.lo));
      e.hi = std::max(e.hi, std::exp(g.hi));
    }
  e.half_width = (e.hi - e.lo) / 2 / e.speedup;
  return e;
}

Stop decide(const Plan& p, const Settings& s, const std::vector<Round>& rounds, double elapsed_s) {
  int done = static_cast<int>(rounds.size());
  if (done < p.min_rounds || done % 2) return Stop::go_on;
  if (estimate(rounds, s.gate_us).half_width <= s.target) return Stop::interval;
  if (done >= p.max_rounds) return Stop::rounds;
  if (elapsed_s >= s.budget_s) return Stop::budget;
  return Stop::go_on;
}

Beside beside(double thread_share, double probe_baseline, double probe_rounds, const std::string& state) {
  Beside b;
  b.thread_share = thread_share;
  b.threads = thread_share > kThreadShare;
  if (probe_baseline > 0 && probe_rounds > 0) b.probe_slower = probe_rounds / probe_baseline - 1;
  b.device = b.probe_slower > kProbeSlower;
  b.state = state;
  return b;
}

Cap cap(const Paces& p, double drift, double machine, bool seen) {
  Cap c;
  if (p.baseline <= 0 || p.beside <= 0) return c;
  c.slower = p.beside / p.baseline - 1;
  // The machine's slow-down credited: never a speed-up (that holds the old bound), at most 1 + machine.
  if (p.judge_baseline > 0 && p.judge_beside > 0) c.machine = std::clamp(p.judge_beside / p.judge_baseline, 1.0, 1 + machine);
  if (seen) c.factor = std::min(1.0, p.baseline * c.machine * (1 + drift) / p.beside);
  return c;
}

}  // namespace pkb::eval::interleave
