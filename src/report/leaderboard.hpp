// What a report says about a set of evaluations: per run (model), per category, and the
// best candidate of each problem. A "problem" here is one problem at one world size and
// size; its samples are the run's candidates for it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/results.hpp"

namespace pkb::report {

// fast_p: correct and more than p times faster than the reference.
inline const std::vector<double> kSpeedupThresholds = {1.0, 1.5, 2.0};

// The unbiased estimator of pass@k (Chen et al. 2021): the chance that at least one of k
// samples drawn without replacement from n, of which c pass, passes: 1 - C(n-c,k)/C(n,k).
// Needs 0 < k <= n.
double pass_at_k(int n, int c, int k);

struct Rates {
  int evaluations = 0, compiled = 0, correct = 0;
  std::map<std::string, int> verdicts;
  std::vector<int> fast;  // per kSpeedupThresholds
  int timed = 0;          // correct ones with a speedup
  std::optional<double> geomean_speedup;        // over correct candidates with a speedup
  std::optional<double> mean_roofline_fraction;  // over correct candidates with one
  void add(const Evaluation& e);
  void finish();  // turns the sums into means
 private:
  double log_speedup_sum_ = 0, roofline_sum_ = 0;
  int roofline_n_ = 0;
};

struct RunSummary {
  std::string run;
  std::string backend;  // its candidates' backends ("triton", or "cpu,triton" when mixed)
  Rates rates;
  int problems = 0;     // problems (at a world size and size) it has samples for
  int min_samples = 0;  // the fewest samples of any of them: pass@k needs k <= this
  std::map<int, std::optional<double>> pass_at_k;                    // k -> mean over problems
  std::map<int, std::vector<std::optional<double>>> fast_at_k;       // k -> per threshold
};

struct CategoryRow {
  std::string category, run;
  Rates rates;
};

struct BestCandidate {
  std::string problem, category, size;
  int problem_id = 0, world = 0;
  int evaluated = 0, correct = 0;  // over every run
  std::optional<Evaluation> best;  // the fastest correct one
};

// A pkb agent run after `turn` turns: a sample counts as correct (fast) once any of its
// candidates up to that turn was. Averaged over problems like RunSummary.
struct TurnRow {
  std::string run;
  int turn = 0;
  int samples = 0;  // the fewest samples of any problem
  std::map<int, std::optional<double>> pass_at_k;  // k -> mean over problems
  std::vector<double> fast;                        // per kSpeedupThresholds: fraction of samples
};

struct Summary {
  std::vector<int> ks;
  size_t evaluations = 0;
  std::vector<RunSummary> runs;           // by name
  std::vector<CategoryRow> categories;    // by category (first problem id), then run
  std::vector<BestCandidate> best;        // by problem id, world size, size
  std::vector<TurnRow> turns;             // pkb agent runs only: by run, then turn
};

// A pkb agent sample's turns count as one sample everywhere but in `turns`: its best
// candidate (the fastest correct one, else its last).
Summary summarize(const std::vector<Evaluation>& evaluations, const std::vector<int>& ks);

}  // namespace pkb::report
