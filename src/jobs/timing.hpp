// The timing discipline both sides follow: the candidate on its ranks, the reference on
// the judge ranks (and in dryrun --time). Warm-up within its time budget; the number of
// timed calls agreed by every rank from the slowest warm-up pace (the settings' count
// wherever the budget holds it); before every timed call fresh inputs (prepared outside
// the timed region), the ranks aligned by a device barrier on the heap's signal pads and
// the L2 evicted; CUDA events (host clock on the CPU device) around the call alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eval/reports.hpp"
#include "jobs/context.hpp"
#include "jobs/cpu_counters.hpp"
#include "jobs/op_profile.hpp"
#include "rank/rank.hpp"

namespace pkb::jobs::timing {

// Input keys of the seeded streams: every call's inputs are its own.
inline constexpr int64_t kTimedKey = 1000000;  // + the timed call's number
inline constexpr int64_t kWarmKey = 2000000;
inline constexpr int64_t kConnectKey = 3000000;  // the reference run that makes NCCL connect

// Measures the host side of a timed loop (eval::HostUse) on the calling thread: start(),
// then call_started() / call_returned() around each call, then stop().
class HostMeter {
 public:
  // `probe`: the fixed work of probe_host, timed first (outside the loop's calls);
  // `profile_ops`: each op inside the calls timed too (--profile-ops, jobs/op_profile.hpp).
  void start(const eval::HostProbe& probe = {}, bool profile_ops = false);
  void call_started();
  // A candidate rank's: the candidate's own call ran from `begin` to `end` inside this call's
  // span (the rest is pkb's gate), and pkb's copy for @reference took `copy_us` of it. The
  // call's enqueue time is then the candidate's call alone, as the judges' is the
  // reference's run alone: the two sides' host per call compare like with like.
  void call_ran(std::chrono::steady_clock::time_point begin, std::chrono::steady_clock::time_point end,
                double copy_us = 0);
  void call_returned();
  eval::HostUse stop();

 private:
  struct Sample {
    double thread_cpu_us = 0, process_cpu_us = 0;
    long voluntary = 0, involuntary = 0, minor_faults = 0, major_faults = 0;
    unsigned long long busy = 0, total = 0;  // /proc/stat's jiffies; total 0: unreadable
  };
  static Sample sample(bool whole = true);  // whole: the process's and the machine's too
  Sample at_start_;
  std::chrono::steady_clock::time_point call_;
  Sample call_sample_;
  std::vector<double> enqueue_us_, enqueue_cpu_us_, cycles_, instructions_, gate_us_, copy_us_;
  double ran_us_ = -1, ran_copy_us_ = 0;  // the candidate's call in this span (call_ran), -1: none
  std::unique_ptr<CpuCounters> counters_;  // the thread's, where the machine counts them
  std::unique_ptr<OpProfile> ops_;
  CpuCounters::Reading call_count_;
  long call_switches_ = 0, call_minor_faults_ = 0, call_major_faults_ = 0;
  eval::HostProbe probe_;
  int cpu_ = -1;
  long thp_anon_kib_ = -1, thp_file_kib_ = -1;
};

// The same fixed work timed on the calling thread (eval::HostProbe): a side whose calls take
// longer on the host and whose probe does too runs on a slower host (core, machine); one
// whose probe does not runs other code or more of it. Launches its kernels and ops on the
// current stream (`stream` for the empty kernel), and waits for the device at the end.
eval::HostProbe probe_host(at::Device d, void* stream);

struct Warmup {
  int calls = 0;
  double s_per_call = 0;
};

// Calls `call` up to job.warmup times, stopping once job.warmup_budget_s is spent (one
// call at least), and waits for the device. `call` returns false to stop (a failure).
Warmup warm_up(const rank::Rank& r, const std::function<bool()>& call);

// The timed calls every rank of the client's namespace makes: as many of job.iters as
// job.timing_budget_s holds at the slowest rank's pace, never under job.min_iters.
int agree_iters(rank::Rank& r, double s_per_call);

// The last channel of the heap's signal pads, which is pkb's (candidates get the others).
int pkb_channel(const heap::Heap& h);

// Times up to `n` calls on `stream`: before each, `prepare(i)` (untimed: fresh inputs,
// poisoned outputs); then, on CUDA once the host starts the call (the stream held until
// then), for a cold cache the L2 evicted and a device barrier of every rank; then
// `call(i)` alone between the events; then `after(i)` (untimed: a capture). Stops after a
// call that returns false. The ranks align on the host once, before the first.
eval::CallTimes timed_loop(rank::Rank& r, void* stream, int n, const std::function<void(int)>& prepare,
                           const std::function<bool(int)>& call, const std::function<void(int)>& after);

// The reference's timing, with the same discipline: warm-up on one input set, then every
// timed call on inputs of its own, drawn from the run's seed (key kTimedKey + i). Needs
// the rank's heap (its signal pads). Announces the reference's warm-up and timing phases.
eval::CallTimes time_reference(ProblemContext& pc, void* stream);

// When a timing of the reference is stable enough to be a baseline: the slowest rank's
// calls spread little (IQR / median), and the SM clock was at its maximum (or held below it
// only by the power cap) before and after the timed calls, with no thermal or hardware
// slowdown. A speedup is reference / candidate: a disturbed baseline inflates every
// speedup measured against it, and the cache would reuse it for every later candidate.
struct Stability {
  static constexpr double kMaxRelIqr = 0.10;  // on CUDA, unless the job says otherwise
  double max_rel_iqr = kMaxRelIqr;            // < 0: no limit on the spread
  double min_iqr_us = 1.0;  // a spread this small is the timer's and the launches' own (7 us calls)
  double min_clock_fraction = 0.90;
  int attempts = 1;  // timings in the same judges at most, until one is stable (1 with no limit)

  // The job's rule on this device (rank::Job::reference_max_iqr, reference_attempts): with
  // no limit given, kMaxRelIqr on CUDA and none on the CPU device.
  static Stability of(const rank::Job& job, bool cuda);
};

// The reference timed until a timing is stable (at most rule.attempts times), every judge
// agreeing on each attempt from the slowest rank's calls. Kept: the stable attempt with the
// lowest median, else (none stable) the least spread one, and `stable` says which.
struct ReferenceTiming {
  std::vector<eval::ReferenceAttempt> attempts;  // this rank's
  int kept = 0;
  bool stable = false;
  std::string why;  // why the kept attempt is not stable ("" when it is)
};
ReferenceTiming time_reference_until_stable(ProblemContext& pc, void* stream, const Stability& rule);

}  // namespace pkb::jobs::timing
