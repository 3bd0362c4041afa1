// What the ranks of `pkb eval` report to the parent, typed: a judge rank reports what it
// found (the first failure all judges agreed on, the trials run, the reference's timing);
// a candidate rank reports what only it can measure (its calls' times, the escape check,
// clocks, the sandbox). Both sides build these and send them as JSON; the parent reads
// them back with from_json and judges (eval/verdict.hpp). Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
  nlohmann::json mismatch;  // max_abs_err, bad_count, first_bad_index... for values (compare.hpp), or null

  nlohmann::json to_json() const;
  static Failure from_json(const nlohmann::json& j);
};

// The timed calls of one side on one rank.
struct CallTimes {
  std::vector<double> us;   // one per timed call
  int warmup = 0;           // warm-up calls made (the settings' count, or fewer within the time budget)
  double loop_us = 0;       // the rank's own wall clock over the timed loop
};

struct JudgeReport {
  std::optional<Failure> failure;  // agreed by every judge: the same on each
  int trials_run = 0;
  int timed_calls_checked = 0;
  int tolerated_outputs = 0;        // outputs with elements outside atol/rtol within the spec's mismatch
  int64_t tolerated_max = 0;
  std::optional<CallTimes> reference;  // when this evaluation timed the reference
  double reference_peak_bytes = 0;     // the reference's peak device memory on this rank (CUDA), 0 unknown
  nlohmann::json phase_ms = nlohmann::json::object();
};

struct EscapeCheck {
  int calls = 0;
  std::vector<double> host_us, event_us, baseline_host_us;
  std::string capture = "unknown";  // joined, unjoined or unknown
};

struct Clocks {
  int sm_mhz_before = 0, sm_mhz_after = 0, max_sm_mhz = 0;
  unsigned long long throttle_reasons = 0;
  bool throttled = false;
};

struct CandidateReport {
  std::optional<CallTimes> timing;
  std::optional<EscapeCheck> escape;
  std::optional<Clocks> clocks;
  int captured_calls = 0;
  nlohmann::json sandbox;                 // rank::SandboxStatus as JSON
  nlohmann::json device_copy;             // {"bytes", "median_us"}: rank 0 on CUDA, else null
  nlohmann::json phase_ms = nlohmann::json::object();
};

nlohmann::json to_json(const CallTimes& t);
nlohmann::json to_json(const JudgeReport& r);
nlohmann::json to_json(const CandidateReport& r);
// Throw nlohmann::json::exception on a malformed report (a pkb bug, or a rank whose channel
// was written by something else: the parent says so).
JudgeReport judge_report_from_json(const nlohmann::json& j);
CandidateReport candidate_report_from_json(const nlohmann::json& j);

}  // namespace pkb::eval
