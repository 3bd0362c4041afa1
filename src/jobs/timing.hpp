// The timing discipline of pkb's timed calls: warm-up within its time budget; the number of
// timed calls agreed by every rank from the slowest warm-up pace (the settings' count
// wherever the budget holds it); before every timed call fresh inputs (prepared outside the
// timed region), the ranks aligned by a device barrier on the heap's signal pads and the L2
// evicted; CUDA events (the host clock on the CPU device) around the call alone. pkb eval
// keeps it through the gate (jobs/gate.hpp); dryrun --time times the reference alone by it.
#pragma once

#include <cstdint>
#include <functional>

#include "eval/reports.hpp"
#include "jobs/context.hpp"
#include "rank/rank.hpp"

namespace pkb::jobs::timing {

// Input keys of the seeded streams: every call's inputs are its own.
inline constexpr int64_t kTimedKey = 1000000;     // + the timed call's number
inline constexpr int64_t kWarmKey = 2000000;
inline constexpr int64_t kConnectKey = 3000000;   // the reference run that makes NCCL connect
inline constexpr int64_t kBaselineKey = 4000000;  // + the number of the reference's call before the candidate's load

struct Warmup {
  int calls = 0;
  double s_per_call = 0;
};

// Calls `call` up to `most` times (job.warmup by default), stopping once `budget_s`
// (job.warmup_budget_s) is spent (one call at least) and, on CUDA, going on past `most`
// within the budget until the SM clock is up; then waits for the device. Every rank of the
// client's namespace makes the same number of calls (they stop together, where one is out
// of budget). `call` returns false to stop (a failure).
Warmup warm_up(const rank::Rank& r, const std::function<bool()>& call, int most = -1, double budget_s = -1);

// The timed calls every rank of the client's namespace makes: as many of `iters`
// (job.iters by default) as `budget_s` (job.timing_budget_s by default) holds at the
// slowest rank's pace, never under job.min_iters.
int agree_iters(rank::Rank& r, double s_per_call, int iters = -1, double budget_s = -1);

// The last channel of the heap's signal pads, which is pkb's (candidates get the others).
int pkb_channel(const heap::Heap& h);

// Times up to `n` calls on `stream`: before each, `prepare(i)` (untimed: fresh inputs);
// then for a cold cache the L2 evicted and a device barrier of every rank; then `call(i)`
// alone between the events. Stops after a call that returns false. The ranks align on the
// host once, before the first.
eval::CallTimes timed_loop(rank::Rank& r, void* stream, int n, const std::function<void(int)>& prepare,
                           const std::function<bool(int)>& call);

// The reference alone (dryrun --time): warm-up on one input set, then every timed call on
// inputs of its own, drawn from the run's seed (key kTimedKey + i). Needs the rank's heap
// (its signal pads). Announces the reference's warm-up and timing phases.
eval::CallTimes time_reference(ProblemContext& pc, void* stream);

}  // namespace pkb::jobs::timing
