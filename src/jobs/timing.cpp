#include "jobs/timing.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include <ATen/ATen.h>

#include "device/device.hpp"
#include "io/clock.hpp"
#include "launch/phases.hpp"

namespace pkb::jobs::timing {

namespace {

using Clock = std::chrono::steady_clock;
using io::seconds_since;

// Whether the SM clock is where a timing can start: at its maximum, or held below it only
// by the power cap (an idle GPU starts at a fraction of it and needs a while to ramp up).
bool clocks_up(const device::Clocks& c) {
  constexpr unsigned long long kPowerCap = 0x4;  // NVML's SW power cap reason
  constexpr double kFraction = 0.90;
  if (c.max_sm_mhz <= 0) return true;  // unknown (no NVML): nothing to wait for
  return c.sm_mhz >= kFraction * c.max_sm_mhz || (c.throttle_reasons & kPowerCap);
}

// Whether every rank stops warming up here: where one is out of its budget, or all have
// made their calls (and, on CUDA, their clocks are up). The calls are collective, so a rank
// that stopped on its own clock would leave the others in the next call's communication for
// good (seen on two busy cores: one rank a call short of the other, both waiting).
bool all_stop(const rank::Rank& r, bool over_budget, bool done) {
  if (r.world <= 1) return over_budget || done;
  bool any_over = false, all_done = true;
  for (auto& x : r.client.all_gather(r.rank, r.world, std::string{over_budget ? 'o' : '-', done ? 'd' : '-'})) {
    any_over = any_over || x.at(0) == 'o';
    all_done = all_done && x.at(1) == 'd';
  }
  return any_over || all_done;
}

}  // namespace

Warmup warm_up(const rank::Rank& r, const std::function<bool()>& call, int most, double budget_s) {
  const rank::Job& job = r.job;
  if (most < 0) most = job.warmup;
  if (budget_s < 0) budget_s = job.warmup_budget_s;
  most = std::max(most, 1);
  Warmup w;
  auto t0 = Clock::now();
  bool cuda = r.device.is_cuda();
  // The settings' calls, then on CUDA more until the clock has ramped up (within the budget):
  // 500 calls of 10 us are 5 ms, far less than an idle GPU takes to reach its clock.
  for (;;) {
    ++w.calls;
    if (!call()) {
      // The others stop at their next check, where this is the answer they get.
      all_stop(r, true, true);
      break;
    }
    // The clock only means something once the device has done the work: check it at
    // doubling counts (1, 2, 4, ...), so a fast call is not held up by waiting.
    if ((w.calls & (w.calls - 1)) == 0 || w.calls >= most) {
      device::synchronize(r.device);
      bool over = seconds_since(t0) > budget_s;
      bool done = w.calls >= most && (!cuda || clocks_up(device::read_clocks(r.device)));
      if (all_stop(r, over, done)) break;
    }
  }
  device::synchronize(r.device);
  w.s_per_call = seconds_since(t0) / w.calls;
  return w;
}

int agree_iters(rank::Rank& r, double s_per_call, int iters, double budget_s) {
  const rank::Job& job = r.job;
  if (iters < 0) iters = job.iters;
  if (budget_s < 0) budget_s = job.timing_budget_s;
  double slowest = s_per_call;
  for (auto& x : r.client.all_gather(r.rank, r.world, std::to_string(s_per_call))) slowest = std::max(slowest, std::stod(x));
  int fit = slowest > 0 ? static_cast<int>(std::min<double>(budget_s / slowest, iters)) : iters;
  return std::max(std::min(iters, job.min_iters), fit);
}

int pkb_channel(const heap::Heap& h) {
  return static_cast<int>(h.pad_bytes() / sizeof(uint32_t) / h.world()) - 1;
}

eval::CallTimes timed_loop(rank::Rank& r, void* stream, int n, const std::function<void(int)>& prepare,
                           const std::function<bool(int)>& call) {
  bool cold = r.job.cache == "cold";
  auto timer = device::make_timer(r.device, stream, n);
  device::synchronize(r.device);
  r.client.barrier(r.world);
  int done = 0;
  while (done < n) {
    int i = done++;
    prepare(i);
    if (cold) device::flush_l2(r.device, stream);
    device::heap_barrier(*r.heap, pkb_channel(*r.heap), stream);
    timer->start(i);
    bool ok = call(i);
    timer->stop(i);
    if (!ok) break;
  }
  eval::CallTimes t;
  t.us = timer->elapsed_us();
  t.us.resize(done);
  device::synchronize(r.device);
  return t;
}

eval::CallTimes time_reference(ProblemContext& pc, void* stream) {
  rank::Rank& r = pc.rank;
  r.client.phase(launch::phase::kReferenceWarmup);
  Outputs out = ref::make_outputs(pc.ctx);
  Warmup w;
  {
    Inputs warm = pc.inputs_for(kWarmKey);  // gone before the timed calls' inputs come
    w = warm_up(r, [&] {
      out.reset_sizes();
      pc.reference->run(pc.ctx, warm, out);
      return true;
    });
  }
  int n = agree_iters(r, w.s_per_call);
  r.client.phase(launch::phase::kReferenceTiming);
  Inputs in;
  eval::CallTimes t = timed_loop(
      r, stream, n,
      [&](int i) {
        r.client.phase(launch::phase::kReferenceTiming, i);  // the progress line counts the calls
        in = pc.inputs_for(kTimedKey + i);
        out.reset_sizes();
        device::synchronize(r.device);  // the device idle before the call, as behind the gate
      },
      [&](int) {
        pc.reference->run(pc.ctx, in, out);
        return true;
      });
  t.warmup = w.calls;
  return t;
}

}  // namespace pkb::jobs::timing
