// How pkb eval times a candidate against the reference. Both run in the candidate rank's
// process, one after the other on the same thread, through the same gate, on the judge's
// clock: the trusted reference first on its own (before the candidate is loaded: the
// baseline nothing of the candidate can touch), then the two in alternating blocks of calls
// (C R, R C, C R, R C, ...: a drift of the machine falls on both sides alike) until the
// speedup's 95% interval is within +-target of its value or the budget is spent. A process's
// host speed, the machine's drift and pkb's own path are then the same for both sides; what
// is left between them is their code. Torch-free: the judges and the verdict share it, and
// it is unit-tested on made-up times.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pkb::eval::interleave {

enum class Side { reference, candidate };
const char* side_name(Side s);

// What the job asks for (rank::Job's timing fields; their defaults are stated there).
struct Settings {
  int block = 10;          // timed calls of one side in a row
  int calls = 100;         // timed calls a side, where the budget holds them
  int min_calls = 10;      // timed calls a side, whatever the budget
  int max_calls = 300;     // timed calls a side at most, while the interval is wider than `target`
  double target = 0.03;    // the interval's half-width the rounds go on for, relative to the speedup
  double budget_s = 20;    // the two sides' timed calls together, beyond which no round starts
};

// The rounds of one evaluation, agreed by every judge from the two sides' paces (seconds a
// call at the slowest rank, from their warm-ups).
struct Plan {
  int block = 10;       // calls of one side in a row
  int min_rounds = 6;   // rounds always run (`calls` a side within the budget), even
  int max_rounds = 30;  // rounds at most, even
  int max_calls() const { return max_rounds * 2 * block; }  // both sides
};
Plan plan(const Settings& s, double reference_s, double candidate_s);

// The side of the call numbered `call` (from 0, both sides counted) under `plan`: round k
// runs its two blocks in the order C R where k is even, R C where k is odd. Rounds end in
// pairs, so the last call is the candidate's (its outputs are still there to be looked at).
Side side_of(const Plan& plan, int call);
// Whether `call` is the last of its round (the judges decide whether to go on there).
bool ends_round(const Plan& plan, int call);

// One round: each side's calls (the slowest rank's time per call, us).
struct Round {
  std::vector<double> reference_us, candidate_us;
};

// The speedup over rounds: the geometric mean of the rounds' ratios (median reference call
// over median candidate call of the round) and its 95% t-interval over the rounds.
struct Estimate {
  double speedup = 0, lo = 0, hi = 0;
  int rounds = 0;
  double half_width = std::numeric_limits<double>::infinity();  // (hi - lo) / 2 over the speedup
  nlohmann::json to_json() const;
};
Estimate estimate(const std::vector<Round>& rounds);

// Why the rounds ended: `interval` (the target met), `rounds` (max_rounds run), `budget`
// (the time ran out); `go_on` while none holds, and after an odd number of rounds. The
// plan's min_rounds always run.
enum class Stop { go_on, interval, rounds, budget };
const char* stop_name(Stop s);
Stop decide(const Plan& plan, const Settings& s, const std::vector<Round>& rounds, double elapsed_s);

// Student's t quantile for a two-sided 95% interval with `df` degrees of freedom.
double t95(int df);

// A candidate that slows the reference down inside its own process would gain by it: the
// reference's calls beside the candidate are credited at most `1 + drift` times its calls
// before the candidate was loaded (its baseline). Returns the factor the speedup keeps
// (1 where the reference ran no slower than that), and says how much slower it ran.
struct Cap {
  double factor = 1;   // the speedup and its interval are multiplied by this (<= 1)
  double slower = 0;   // the reference's median beside the candidate over its baseline's, less 1
  bool applied() const { return factor < 1; }
};
Cap cap(double baseline_median_us, double beside_median_us, double drift);

}  // namespace pkb::eval::interleave
