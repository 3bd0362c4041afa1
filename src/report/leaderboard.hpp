// What a report says about a set of evaluations: what they were run with (the header) and
// what they mix (warnings), per run (model), per category, per problem and run, the best
// candidate of each problem, and the failures. A "problem" here is one problem at one
// world size and size; its samples are the run's candidates for it.
//
// Only timings that say something about speed count for speed (eval::timing_counts: the
// CUDA device, a GPU per rank, nothing in doubt): fast_p, fast_p@k, speedups, roofline and
// the best candidate use those alone. Correct evaluations on the CPU device or with ranks
// sharing a GPU count as correct, never as fast.
#pragma once

#include <map>
#include <optional>
#include <set>
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
  int timed = 0;          // correct ones whose timing counts
  int not_meaningful = 0; // correct ones with a timing that does not count (CPU device, shared GPU, ...)
  std::optional<double> geomean_speedup;        // over correct candidates whose timing counts
  std::optional<double> mean_roofline_fraction;  // likewise
  void add(const Evaluation& e);
  void finish();  // turns the sums into means
 private:
  double log_speedup_sum_ = 0, roofline_sum_ = 0;
  int roofline_n_ = 0;
};

// How runs are ranked, said on every report: by geo-mean speedup (runs with no timing that
// counts come after those with one), then fast_1, then correct, then name.
extern const char* const kRankOrder;

struct RunSummary {
  int rank = 0;  // 1 for the first run by kRankOrder
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
  // The fastest correct candidate whose timing counts, by the median of its speedups when
  // the same file was evaluated more than once (never its luckiest run); `best` is the
  // evaluation at that median.
  std::optional<Evaluation> best;
  int repeats = 0;                               // evaluations of the best file that count
  std::optional<double> repeat_low, repeat_high;  // their smallest and largest speedup
  std::optional<Evaluation> correct_uncounted;    // a correct one whose timing does not count, when none does
};

// One problem's evaluations by one run.
struct MatrixCell {
  int evaluated = 0, correct = 0;
  std::optional<Evaluation> fastest;  // the fastest correct one whose timing counts
  std::set<std::string> notes;        // why correct ones have no timing that counts ("CPU device", ...)
};

struct MatrixRow {
  std::string problem, size;
  int problem_id = 0, world = 0;
  std::map<std::string, MatrixCell> cells;  // by run
};

// What the evaluations were run with, each as the distinct values found.
struct Header {
  std::set<std::string> versions;  // "0.1.0 (commit abc1234)"
  // The software, from each result's "versions": pkb's versions and commits (how many
  // results recorded none), torch, NCCL, the CUDA runtime and driver.
  std::set<std::string> pkb_versions, commits, torch, nccl, cuda_runtime, cuda_driver;
  int without_commit = 0;
  std::set<std::string> devices;   // "cuda (NVIDIA H100 80GB HBM3)", "cpu"
  std::set<std::string> profiles, sizes, dtypes, seeds;
  std::map<std::string, int> settings;  // "trials 5, warmup 10, iters 10" -> evaluations run so
  // Evaluations whose time budgets made fewer calls than their settings, and the fewest
  // trials, warm-up and timed calls any made (-1: none recorded).
  int cut_by_budgets = 0, fewest_trials = -1, fewest_warmup = -1, fewest_iters = -1;
  std::set<int> worlds;
  std::string first_time, last_time;  // when the evaluations ran (UTC), where recorded
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
  Header header;
  std::vector<std::string> warnings;      // what the results mix, and what does not count
  std::vector<RunSummary> runs;           // ranked (kRankOrder)
  std::vector<CategoryRow> categories;    // by category (first problem id), then the runs' rank
  std::vector<BestCandidate> best;        // by problem id, world size, size
  std::vector<TurnRow> turns;             // pkb agent runs only: by run, then turn
  std::vector<std::string> run_names;     // the matrix's columns, in rank order
  std::vector<MatrixRow> matrix;          // by problem id, world size, size
  std::vector<Evaluation> failures;       // every evaluation that is not correct, by problem, run, sample
};

// A pkb agent sample's turns count as one sample everywhere but in `turns`: its best
// candidate (the fastest correct one, else its last).
Summary summarize(const std::vector<Evaluation>& evaluations, const std::vector<int>& ks);

}  // namespace pkb::report
