// How pkb eval times a candidate against the reference. Both run in the candidate rank's
// process, one after the other on the same thread, through the same gate, on the judge's
// clock: the trusted reference first on its own (before the candidate is loaded: the
// baseline nothing of the candidate can touch), then the two in alternating blocks of calls
// (C R, R C, C R, R C, ...: a drift of the machine falls on both sides alike) until the
// speedup's 95% interval is within +-target of its value or the budget is spent. A process's
// host speed, the machine's drift and pkb's own path are then the same for both sides; what
// is left between them is their code. Beside the baseline and at every round's end the
// judge times the reference in its own process too, which no candidate code ever enters:
// how much the machine itself drifted, which the bound on the reference beside the
// candidate allows for (cap). Torch-free: the judges and the verdict share it, and it is
// unit-tested on made-up times.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rank/settings.hpp"

namespace pkb::eval::interleave {

enum class Side { reference, candidate };
const char* side_name(Side s);

// What the job asks for (rank::EvalSettings, where the defaults are).
struct Settings {
  int block = rank::EvalSettings{}.block;          // timed calls of one side in a row
  int calls = rank::EvalSettings{}.iters;          // timed calls a side, where the budget holds them
  int min_calls = rank::EvalSettings{}.min_iters;  // timed calls a side, whatever the budget
  int max_calls = rank::EvalSettings{}.max_iters;  // a side at most, while the interval is wider than `target`
  double target = rank::EvalSettings{}.interval_target;  // the interval's half-width aimed at, over the speedup
  double budget_s = 2 * rank::EvalSettings{}.timing_budget_s;  // both sides' timed calls; then no round starts
  double gate_us = 0;      // how uncertain the gate's cost taken off every call is (its IQR)
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

// One round: each side's calls (the slowest rank's time per call, us), and the reference's
// calls in the judges' own processes at the round's end (the machine's pace, for the cap).
// `probe_us`: the judges' device probe then (device::probe), after the round's last block
// (the reference's where the round is C R, the candidate's where it is R C).
struct Round {
  std::vector<double> reference_us, candidate_us, judge_us, probe_us;
};

// The speedup over rounds: the Hodges-Lehmann estimate of the rounds' log ratios (median
// reference call over median candidate call of the round; the median of their pairwise
// means), and its 95% interval from Wilcoxon's signed-rank test. Robust where the host
// throws a round off (a burst of slow calls in one block); about as tight as a t-interval
// where it does not. `gate_us` widens the interval by the gate's uncertainty: the estimate
// again with every call `gate_us` longer and shorter (it moves a speedup away from 1 only).
struct Estimate {
  double speedup = 0, lo = 0, hi = 0;
  int rounds = 0;
  double half_width = std::numeric_limits<double>::infinity();  // (hi - lo) / 2 over the speedup
  nlohmann::json to_json() const;
};
Estimate estimate(const std::vector<Round>& rounds, double gate_us = 0);

// The Hodges-Lehmann location of `x` and its 95% signed-rank interval [lo, hi] (exact up
// to 200 values, the normal approximation beyond; lo = hi = the estimate under 6 values,
// where no interval at 95% exists, with `ok` false).
struct Location {
  double estimate = 0, lo = 0, hi = 0;
  bool ok = false;
};
Location hodges_lehmann(const std::vector<double>& x);

// Why the rounds ended: `interval` (the target met), `rounds` (max_rounds run), `budget`
// (the time ran out); `go_on` while none holds, and after an odd number of rounds. The
// plan's min_rounds always run.
enum class Stop { go_on, interval, rounds, budget };
const char* stop_name(Stop s);
Stop decide(const Plan& plan, const Settings& s, const std::vector<Round>& rounds, double elapsed_s);

// Whether the candidate was seen at work beside the reference's calls, from outside its
// process where it can be: threads of its own on the CPU while the reference's blocks ran
// (more than kThreadShare of their wall time); the judges' device probe at the rounds' ends
// slower than beside the baseline (more than kProbeSlower: the GPU shared with work the
// candidate left running; a process held still keeps its kernels running); or process
// state the reference runs under that it changed (`state`: what, "" for nothing). Probe
// medians in us; 0: not measured.
inline constexpr double kThreadShare = 0.02, kProbeSlower = 0.10;
struct Beside {
  double thread_share = 0;  // the candidate's threads' CPU time over the reference blocks' wall time
  double probe_slower = 0;  // the probe at the rounds' ends over its baseline, less 1
  std::string state;
  bool threads = false, device = false;
  bool any() const { return threads || device || !state.empty(); }
};
Beside beside(double thread_share, double probe_baseline, double probe_rounds, const std::string& state = "");

// A candidate that slows the reference down inside its own process would gain by it. Where
// something of it was seen beside the reference (`seen`: Beside::any), the reference's calls
// beside the candidate are credited at most `1 + drift` times its calls before the candidate
// was loaded (its baseline), times how much slower the machine itself ran meanwhile (the
// reference in the judges' processes, timed beside the baseline and at the rounds' ends, on
// the candidate's timing CPU with the candidate held), that last at most `1 + machine`:
// work the candidate leaves on the GPU slows the judges' reference too. Where nothing was,
// the rounds' estimate stands: the same process runs both sides' blocks in turn, and a host
// that slows it for seconds (2.6x, on the H100) slows both alike, which a pace measured
// at another time or in another process does not follow. Medians of calls, us; a judges'
// median of 0: not measured (the bound of the baseline alone). Returns the factor the
// speedup keeps (1 where the reference ran no slower than allowed, or nothing was seen),
// and says how much slower it ran.
struct Paces {
  double baseline = 0, beside = 0;              // the reference in the candidate rank
  double judge_baseline = 0, judge_beside = 0;  // the reference in the judges' own processes
};
struct Cap {
  double factor = 1;   // the speedup and its interval are multiplied by this (<= 1)
  double slower = 0;   // the reference beside the candidate over its baseline, less 1
  double machine = 1;  // how much slower the machine ran (the judges' reference), as credited
  bool applied() const { return factor < 1; }
};
Cap cap(const Paces& p, double drift, double machine, bool seen = true);

}  // namespace pkb::eval::interleave
