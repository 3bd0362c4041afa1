// What the ranks of `pkb eval` report to the parent, typed: a judge rank reports what it
// found and measured (the first failure all judges agreed on, the trials run, the
// reference's timing, and its candidate rank's calls timed by the judge's own clock); a
// candidate rank reports what only it can say (its own reading of its calls' times, the
// escape check, the sandbox). Both sides build these and send them as JSON; the parent
// reads them back with from_json and judges (eval/verdict.hpp). Torch-free.
#pragma once

#include <algorithm>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
  nlohmann::json mismatch;  // max_abs_err, bad_count, first_bad_index... for values (compare.hpp), or null

  nlohmann::json to_json() const;
  static Failure from_json(const nlohmann::json& j);
};

// The host side of one rank's timed loop, to tell where a launch-bound call's time goes:
// how long each call took to return (its work enqueued), and what the timing thread, its
// process and the machine did meanwhile. Read in the rank's own process: a diagnostic,
// never part of a verdict.
// The probe (jobs/timing.hpp) tells the process from the code: the same fixed work timed
// on each side's timing thread just before its loop.
struct HostProbe {
  double cpu_us = -1;     // a fixed arithmetic loop: the core's speed for this thread
  double launch_us = -1;  // an empty kernel launched on the timed stream (CUDA only)
  double op_us = -1;      // an in-place add on a one-element tensor: ATen's dispatch and a launch
  double alloc_us = -1;   // a small tensor made and freed: torch's allocator
  double cpu_ghz = -1;    // the core's clock over the arithmetic loop (cycles / time); -1: not counted
  double mem_ns = -1;     // a dependent load from a page not touched since the last: memory's latency
};

HostProbe host_probe_from_json(const nlohmann::json& j);

// One ATen op or communicator call in a side's timed calls (--profile-ops, jobs/op_profile.hpp):
// made `calls` times a call, taking `us` of the host a call (start to end: the ops it made
// inside included); `nested`: made inside another op.
struct OpHost {
  std::string name;
  double calls = 0, us = 0;
  bool nested = false;
};

struct HostUse {
  std::vector<double> enqueue_us;                   // per timed call: the reference's run, the candidate's call
  std::vector<double> enqueue_cpu_us;               // the thread's CPU time in each (less: it waited); a
                                                    // candidate rank's over the gate's ops too
  long call_switches = 0;                           // context switches inside the calls
  double thread_cpu_us = 0, process_cpu_us = 0;     // over the loop
  long switches_voluntary = 0, switches_involuntary = 0;  // the timing thread's
  double machine_busy = -1;  // the machine's CPUs, busy fraction over the loop (/proc/stat); -1 unknown
  long call_minor_faults = 0, call_major_faults = 0;  // page faults inside the calls
  HostProbe probe;
  int cpu = -1;  // the CPU the timing thread started the loop on
  // The thread's user-space cycles and instructions in each call (jobs/cpu_counters.hpp);
  // empty where the machine does not count them.
  std::vector<double> call_cycles, call_instructions;
  // The process's memory on huge pages as the loop starts (/proc/self/smaps_rollup, KiB):
  // anonymous (the heap) and file-backed (libraries' code); -1 where unreadable.
  long thp_anon_kib = -1, thp_file_kib = -1;
  // A candidate rank's, per call: pkb's gate ops around the call (outside enqueue_us), and
  // the host time of @reference's copy of its outputs inside it (0 for a real candidate).
  std::vector<double> gate_us, copy_us;
  std::vector<OpHost> ops;  // --profile-ops: the timed calls' ops, the longest first; else empty
};

// The timed calls of one side on one rank.
struct CallTimes {
  std::vector<double> us;   // one per timed call
  int warmup = 0;           // warm-up calls made (the settings' count, or fewer within the time budget)
  double loop_us = 0;       // the rank's own wall clock over the timed loop
  std::optional<HostUse> host;
};

struct Clocks {
  int sm_mhz_before = 0, sm_mhz_after = 0, max_sm_mhz = 0;
  unsigned long long throttle_reasons = 0;
  bool throttled = false;
};

// One timing of the reference by the judges (they time it again while it is not stable).
struct ReferenceAttempt {
  CallTimes times;
  Clocks clocks;
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

  // Spread enough that what is taken off is in doubt (the flag `noisy_gate`).
  bool noisy() const { return spread_beyond(iqr_us, median_us, 0.1, 1.0); }
};

struct JudgeReport {
  std::optional<Failure> failure;  // agreed by every judge: the same on each
  int trials_run = 0;
  int timed_calls_checked = 0;
  int captured_calls = 0;           // timed calls whose outputs were captured and checked
  int tolerated_outputs = 0;        // outputs with elements outside atol/rtol within the spec's mismatch
  int64_t tolerated_max = 0;
  std::vector<ReferenceAttempt> reference;  // when this evaluation timed the reference: every attempt
  int reference_kept = -1;                  // the attempt kept (agreed by the judges), -1: none
  bool reference_stable = true;             // the kept attempt met jobs/timing.hpp's Stability
  std::string reference_unstable;           // else why not
  double reference_peak_bytes = 0;     // the reference's peak device memory on this rank (CUDA), 0 unknown
  // The candidate rank's timed calls as this judge's clock saw them (CUDA: events on the
  // judge's stream around the gate, less its overhead); none on the CPU device.
  std::optional<CallTimes> candidate;
  std::optional<GateOverhead> gate;
  std::optional<Clocks> clocks;        // around the candidate's timed calls (CUDA)
  double machine_busy = -1;            // the machine's CPUs over the candidate's timed calls, as HostUse
  // The judge's own host probe, on the CPU it timed the reference on, just before the
  // candidate's warm-up and just after its timed calls (CUDA): the same process and CPU as
  // the reference's probe, at the candidate's time. Against the reference's probe it says
  // whether the machine's host moved between the two timings; against the candidate's,
  // whether the two processes differ at one time.
  std::vector<HostProbe> probes_at_candidate;
  nlohmann::json device_copy;          // {"bytes", "median_us"}: rank 0 on CUDA, else null
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
  std::optional<EscapeCheck> escape;
  nlohmann::json sandbox;                 // rank::SandboxStatus as JSON
  nlohmann::json phase_ms = nlohmann::json::object();
};

nlohmann::json to_json(const HostProbe& p);
nlohmann::json to_json(const HostUse& h);
nlohmann::json ops_json(const std::vector<OpHost>& ops);
nlohmann::json to_json(const CallTimes& t);
nlohmann::json to_json(const Clocks& c);
nlohmann::json to_json(const GateOverhead& g);
nlohmann::json to_json(const JudgeReport& r);
nlohmann::json to_json(const CandidateReport& r);
// Throw nlohmann::json::exception on a malformed report (a pkb bug, or a rank whose channel
// was written by something else: the parent says so).
JudgeReport judge_report_from_json(const nlohmann::json& j);
CandidateReport candidate_report_from_json(const nlohmann::json& j);

}  // namespace pkb::eval
