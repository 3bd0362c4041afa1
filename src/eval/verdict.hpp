// The verdict of an evaluation, on the parent's side: what the ranks reported turned into
// a verdict, a message, timing statistics, speedup, bus bandwidth, roofline fraction and
// flags (docs/results.md), by the rules below, each stated once. No torch, no processes:
// it is tested on reports made up for the purpose.
#pragma once

#include <string>
#include <vector>

#include "eval/record.hpp"
#include "eval/reports.hpp"
#include "eval/stats.hpp"
#include "launch/group.hpp"
#include "launch/kinds.hpp"
#include "rank/settings.hpp"
#include "spec/hardware.hpp"
#include "spec/spec.hpp"

namespace pkb::eval {

// pkb's exit codes; scripts and sweeps tell verdicts apart by them.
enum Exit : int {
  kOk = 0,
  kWrong = 1,          // wrong output
  kUsage = 2,          // bad command line, unknown problem, malformed spec
  kCompileError = 3,   // the candidate does not build or lacks an entry point
  kCrash = 4,          // a rank died (signal, non-zero exit, CUDA error)
  kTimeout = 5,        // a phase overran its deadline
  kIntegrity = 6,      // the candidate cheated (mutated inputs, escaped the timer, ...)
  kInternal = 7,       // pkb itself failed (bootstrap, I/O)
  kInterrupted = 130,  // Ctrl-C
};

// The one table between verdicts and exit codes: "correct" 0, "wrong" 1, ... ; an unknown
// verdict is internal; exit_code_verdict gives "" for codes that are no verdict (2, 7, 130).
int verdict_exit_code(const std::string& verdict);
int verdict_exit_code(Verdict v);
std::string exit_code_verdict(int code);

struct Rules {
  // A median under this fraction of the roofline bound is faster than light: a violation.
  double roofline_floor = 0.95;
  // Work escaping the timed stream: a batch's device-synchronised host time beyond its
  // stream time by more than this (after pkb's own overhead), absolute or relative.
  double escape_min_us = 50, escape_fraction = 0.25;
  // A candidate rank's own reading of its calls (its events) against its judge's clock,
  // which is what counts: a median far below the judge's (by this fraction and more than
  // this many us) was rewritten inside the candidate's process. Held on CUDA.
  double self_report_fraction = 0.75, self_report_min_us = 2;
  // The speedup's 95% interval wider than this (relative half-width) when the rounds ended
  // on the budget: the timing says too little to count (flag noisy_timing).
  double max_interval = 0.10;
};

// What the verdict is judged on besides the ranks' reports.
struct Context {
  const spec::ProblemSpec* spec = nullptr;
  std::string size = "default", dtype;
  launch::Device device = launch::Device::cpu;
  int world = 1, ranks_per_gpu = 1;
  bool timing = true;
  const spec::HardwareProfile* hardware = nullptr;  // for the roofline (none: no roofline)
  // CUDA: the judge and candidate rank beside it share one GPU context (MPS), so the
  // judge's clock sees the calls alone; without it their spans hold the other context's
  // time slices and the timing does not count (timing_unverified).
  bool mps = true;
  // The job's timing rules (rank::EvalSettings, where their defaults are): the interval the
  // rounds aim at, and how much slower than its baseline the reference is credited beside
  // the candidate (interleave::cap).
  double interval_target = rank::EvalSettings{}.interval_target, reference_drift = rank::EvalSettings{}.reference_drift,
         machine_drift = rank::EvalSettings{}.machine_drift;
};

// Fills the record's verdict, message, failure, timing, speedup, busbw_gbps, roofline,
// flags, escape_check, run's counts and trials_run, phases_ms, sandbox and clocks from `rep`:
// the group of pkb eval, W judge ranks then W candidate ranks (judge r beside candidate r).
void judge(Record& res, const launch::GroupReport& rep, const Context& c, const Rules& rules = {});

// What a candidate rank's phase events say about its channel: "" when they follow pkb's
// order, else what broke it (only something other than pkb could have written them).
std::string phase_order_error(const std::vector<launch::RankReport::Step>& history);

}  // namespace pkb::eval
