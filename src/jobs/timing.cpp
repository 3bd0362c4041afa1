#include "jobs/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "device/device.hpp"
#include "launch/phases.hpp"

namespace pkb::jobs::timing {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

Warmup warm_up(const rank::Rank& r, const std::function<bool()>& call) {
  const rank::Job& job = r.job;
  Warmup w;
  auto t0 = Clock::now();
  int most = std::max(job.warmup, 1);
  while (w.calls < most) {
    ++w.calls;
    if (!call()) break;
    // The clock only means something once the device has done the work: check it at
    // doubling counts (1, 2, 4, ...), so a fast call is not held up by waiting.
    if ((w.calls & (w.calls - 1)) == 0) {
      device::synchronize(r.device);
      if (seconds_since(t0) > job.warmup_budget_s) break;
    }
  }
  device::synchronize(r.device);
  w.s_per_call = seconds_since(t0) / w.calls;
  return w;
}

int agree_iters(rank::Rank& r, double s_per_call) {
  const rank::Job& job = r.job;
  double slowest = s_per_call;
  for (auto& x : r.client.all_gather(r.rank, r.world, std::to_string(s_per_call))) slowest = std::max(slowest, std::stod(x));
  int fit = slowest > 0 ? static_cast<int>(std::min<double>(job.timing_budget_s / slowest, job.iters)) : job.iters;
  return std::max(std::min(job.iters, job.min_iters), fit);
}

int pkb_channel(const heap::Heap& h) {
  return static_cast<int>(h.pad_bytes() / sizeof(uint32_t) / h.world()) - 1;
}

eval::CallTimes timed_loop(rank::Rank& r, void* stream, int n, const std::function<void(int)>& prepare,
                           const std::function<bool(int)>& call, const std::function<void(int)>& after) {
  bool cold = r.job.cache == "cold";
  auto timer = device::make_timer(r.device, stream, n);
  device::synchronize(r.device);
  r.client.barrier(r.world);
  auto t0 = Clock::now();
  int done = 0;
  while (done < n) {
    int i = done++;
    prepare(i);
    device::heap_barrier(*r.heap, pkb_channel(*r.heap), stream);
    if (cold) device::flush_l2(r.device, stream);
    timer->start(i);
    bool ok = call(i);
    timer->stop(i);
    after(i);
    if (!ok) break;
  }
  eval::CallTimes t;
  t.us = timer->elapsed_us();
  t.us.resize(done);
  device::synchronize(r.device);
  t.loop_us = seconds_since(t0) * 1e6;
  return t;
}

eval::CallTimes time_reference(ProblemContext& pc, void* stream) {
  rank::Rank& r = pc.rank;
  r.client.phase(launch::phase::kReferenceWarmup);
  Warmup w;
  {
    Inputs warm = pc.inputs_for(kWarmKey);  // gone before the timed calls' inputs come
    w = warm_up(r, [&] {
      pc.reference->run(pc.ctx, warm);
      return true;
    });
  }
  int n = agree_iters(r, w.s_per_call);
  r.client.phase(launch::phase::kReferenceTiming);
  Inputs in;
  eval::CallTimes t = timed_loop(
      r, stream, n, [&](int i) { in = pc.inputs_for(kTimedKey + i); },
      [&](int) {
        pc.reference->run(pc.ctx, in);
        return true;
      },
      [](int) {});
  t.warmup = w.calls;
  return t;
}

}  // namespace pkb::jobs::timing
