// What the ranks of `pkb eval` report to the parent, typed: a judge rank reports what it
// found and measured (the first failure all judges agreed on, the trials run, both sides'
// timed calls by the judges' clock); a candidate rank reports what only it can say (its own
// reading of its calls' times, the escape check, the sandbox). Both sides build these and send them as JSON; the parent
// reads them back with from_json and judges (eval/verdict.hpp). Torch-free.
#pragma once

#include <algorithm>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/interleave.hpp"
#include "eval/stats.hpp"

namespace pkb::eval {

// The verdicts of an evaluation (docs/results.md), spelled as in results.
enum class Verdict { correct, wrong, compile_error, crash, timeout, integrity_violation };
const char* verdict_name(Verdict v);
// Throws std::invalid_argument for a name that is no verdict.
Verdict verdict_from_name(const std::string& name);

// The first thing found wrong, where.
struct Failure {
  Verdict verdict = Verdict::wrong;
  std::string phase;   // "trial" or "timing"
  int64_t trial = -1;  // the trial, or (timing) the timed call
  int rank = -1;       // the rank whose outputs or call failed
  std::string output;  // the output or input concerned, "" when none
  std::string reason;  // values, shape, nan, unwritten, input_mutated, late_work, error, sandbox, protocol, ...
  std::string detail;
  // What the failure measured, written beside the fields above: max_abs_err, bad_count,
  // first_bad_index... for values (compare.hpp), the timing for faster_than_roofline; or null.
  nlohmann::json mismatch;

  // The fields every failure has; the callers add rank, trial, output and mismatch.
  static Failure of(Verdict v, std::string phase, std::string reason, std::string detail);
  nlohmann::json to_json() const;
  static Failure from_json(const nlohmann::json& j);
};

// The timed calls of one side on one rank (or, agreed by the judges, at the slowest rank).
struct CallTimes {
  std::vector<double> us;   // one per timed call
  int warmup = 0;           // warm-up calls made (the settings' count, or fewer within the time budget)
};

struct Clocks {
  int sm_mhz_before = 0, sm_mhz_after = 0, max_sm_mhz = 0;
  unsigned long long throttle_reasons = 0;
  bool throttled = false;
};

// What the gate costs a call that does nothing (jobs/gate.hpp): measured by the judge on
// pkb's own empty calls in the candidate rank before the candidate is loaded. Its lower
// quartile is taken off every timed call's span: a disturbance only ever lengthens an empty
// call (one calibration of an H200 sweep had a median of 20 us and an IQR of 8 us against
// the usual 9.6 and 0.03, and its median would have taken a whole call's time off).
struct GateOverhead {
  double median_us = 0, iqr_us = 0;
  int calls = 0;
  double taken_us = 0;  // the lower quartile
  // Its IQR is how uncertain what is taken off is: the speedup's interval holds the rounds'
  // estimate with every call that much longer and shorter (interleave::estimate).
};

// The timing of one evaluation, as every judge agreed it (jobs/eval_judge.cpp): the
// reference in the candidate rank before the candidate was loaded, then the interleaved
// rounds of both sides, each call at the slowest rank (eval/interleave.hpp).
// What the candidate rank's threads did while one side's blocks of timed calls ran, as the
// kernel counts it (/proc/<pid>/task/*/schedstat, read by the judge): ms, summed over the
// rounds, each the most any judge's candidate rank showed. `main`: the thread that makes
// the timed calls; `pkb`: the rank's other threads that were there when its baseline ended
// (torch's, the driver's, NCCL's); `new_threads`: every thread started since (the
// candidate's, or started on its behalf). All of a rank's threads share its timing CPU.
struct HostShare {
  double wall_ms = 0, main_run_ms = 0, main_wait_ms = 0, pkb_run_ms = 0, new_threads_run_ms = 0;
  // The candidate's threads' time on the CPU over the blocks' wall time.
  double new_threads_share() const { return wall_ms > 0 ? new_threads_run_ms / wall_ms : 0.0; }
};

struct Timing {
  CallTimes baseline;                    // the reference alone, before the candidate existed
  std::vector<double> judge_baseline_us;  // the reference in the judges' processes, beside the baseline
  // The judges' device probe (device::probe, us) beside the baseline, each call at the
  // slowest judge; the rounds' are in each Round (probe_us).
  std::vector<double> probe_baseline_us;
  HostShare host_reference, host_candidate;  // during each side's blocks of the rounds
  std::vector<interleave::Round> rounds;  // reference and candidate, beside each other
  interleave::Plan plan;
  std::string stop;                      // interleave::stop_name: why the rounds ended
  int reference_warmup = 0, candidate_warmup = 0;
  double seconds = 0;                    // the rounds' wall time
};

struct JudgeReport {
  std::optional<Failure> failure;  // agreed by every judge: the same on each
  int trials_run = 0;
  int timed_calls_checked = 0;
  int captured_calls = 0;           // timed calls whose outputs were captured and checked
  int tolerated_outputs = 0;        // outputs with elements outside atol/rtol within the spec's mismatch
  int64_t tolerated_max = 0;
  std::optional<Timing> timing;     // agreed by every judge: the same on each
  // The candidate's timed calls as this judge's own clock saw them (CUDA: events on the
  // judge's stream around the gate, less its overhead), to check its candidate rank's own
  // reading against; none on the CPU device.
  std::optional<CallTimes> candidate;
  std::optional<GateOverhead> gate;
  std::optional<Clocks> clocks;        // around the timed rounds (CUDA)
  nlohmann::json phase_ms = nlohmann::json::object();
};

struct EscapeCheck {
  int calls = 0;
  std::vector<double> host_us, event_us, baseline_host_us;
  std::string capture = "unknown";  // joined, unjoined or unknown
};

struct CandidateReport {
  // The rank's own reading of its timed calls (its events; its host clock on the CPU device,
  // where it is the only one): in its process, so it can be rewritten there. On CUDA the
  // judge's clock is what counts, and this is checked against it.
  std::optional<CallTimes> timing;
  std::vector<double> copy_us;  // per timed call: pkb's copy of the results a candidate handed back
  std::optional<EscapeCheck> escape;
  // What of the process the reference runs under differed after the rounds from before the
  // candidate was loaded (device::process_state: "name: before -> after; ..."), "" nothing.
  std::string state_changed;
  nlohmann::json sandbox;                 // rank::SandboxStatus as JSON
  nlohmann::json phase_ms = nlohmann::json::object();
};

nlohmann::json to_json(const CallTimes& t);
nlohmann::json to_json(const Clocks& c);
nlohmann::json to_json(const GateOverhead& g);
nlohmann::json to_json(const Timing& t);
Timing timing_from_json(const nlohmann::json& j);
nlohmann::json to_json(const HostShare& h);
HostShare host_share_from_json(const nlohmann::json& j);
nlohmann::json to_json(const JudgeReport& r);
nlohmann::json to_json(const CandidateReport& r);
// Throw nlohmann::json::exception on a malformed report (a pkb bug, or a rank whose channel
// was written by something else: the parent says so).
JudgeReport judge_report_from_json(const nlohmann::json& j);
CandidateReport candidate_report_from_json(const nlohmann::json& j);

}  // namespace pkb::eval
