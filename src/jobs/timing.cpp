#include "jobs/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <new>
#include <random>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <sys/resource.h>
#include <sched.h>
#include <time.h>

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include "device/device.hpp"
#include "eval/stats.hpp"
#include "launch/phases.hpp"

namespace pkb::jobs::timing {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Whether the SM clock is where a timing can start: at its maximum, or held below it only
// by the power cap (an idle GPU starts at a fraction of it and needs a while to ramp up).
bool clocks_up(const device::Clocks& c, double fraction) {
  constexpr unsigned long long kPowerCap = 0x4;  // NVML's SW power cap reason
  if (c.max_sm_mhz <= 0) return true;             // unknown (no NVML): nothing to wait for
  return c.sm_mhz >= fraction * c.max_sm_mhz || (c.throttle_reasons & kPowerCap);
}

double cpu_us(const rusage& u) {
  auto us = [](const timeval& t) { return t.tv_sec * 1e6 + t.tv_usec; };
  return us(u.ru_utime) + us(u.ru_stime);
}

// The median over `reps` of once(), which returns microseconds.
template <class F>
double median_us(int reps, F&& once) {
  std::vector<double> v;
  for (int k = 0; k < reps; ++k) v.push_back(once());
  return eval::stats_of(v).median;
}

volatile uint64_t probe_sink;  // keeps the arithmetic loop from being optimised away

}  // namespace

HostMeter::Sample HostMeter::sample(bool whole) {
  Sample s;
  // The thread's CPU time from its clock: getrusage's for a thread is only brought up to
  // date at the scheduler's tick (a call of 40 us read 0 on the H200 machine).
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  s.thread_cpu_us = ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
  rusage thread{};
  getrusage(RUSAGE_THREAD, &thread);
  s.voluntary = thread.ru_nvcsw;
  s.involuntary = thread.ru_nivcsw;
  s.minor_faults = thread.ru_minflt;
  s.major_faults = thread.ru_majflt;
  if (!whole) return s;  // a call's: the thread alone (summing every thread's usage costs more)
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  s.process_cpu_us = cpu_us(self);
  // "cpu user nice system idle iowait irq softirq steal ...": idle and iowait are not busy.
  std::ifstream stat("/proc/stat");
  std::string cpu;
  unsigned long long v[8] = {};
  if (stat >> cpu >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5] >> v[6] >> v[7] && cpu == "cpu") {
    for (auto x : v) s.total += x;
    s.busy = s.total - v[3] - v[4];
  }
  return s;
}

void HostMeter::start(const eval::HostProbe& probe, bool profile_ops) {
  enqueue_us_.clear();
  enqueue_cpu_us_.clear();
  gate_us_.clear();
  copy_us_.clear();
  cycles_.clear();
  instructions_.clear();
  counters_ = std::make_unique<CpuCounters>();
  if (!counters_->ok()) counters_.reset();
  call_switches_ = call_minor_faults_ = call_major_faults_ = 0;
  ops_.reset();
  if (profile_ops) ops_ = std::make_unique<OpProfile>();
  probe_ = probe;
  cpu_ = sched_getcpu();
  thp_anon_kib_ = thp_file_kib_ = -1;
  std::ifstream rollup("/proc/self/smaps_rollup");
  std::string key;
  long kib = 0;
  std::getline(rollup, key);  // the range line
  while (rollup >> key >> kib) {
    if (key == "AnonHugePages:") thp_anon_kib_ = kib;
    if (key == "FilePmdMapped:") thp_file_kib_ = kib;
    rollup.ignore(64, '\n');
  }
  at_start_ = sample();
}

// A call's two samples (the thread's clock and getrusage, ~1 us each): each side places them
// outside what it times.
void HostMeter::call_started() {
  call_sample_ = sample(false);
  if (counters_) call_count_ = counters_->read();
  ran_us_ = -1;
  if (ops_) ops_->inside(true);
  call_ = Clock::now();
}

void HostMeter::call_ran(Clock::time_point begin, Clock::time_point end, double copy_us) {
  ran_us_ = std::chrono::duration<double, std::micro>(end - begin).count();
  ran_copy_us_ = copy_us;
}

void HostMeter::call_returned() {
  double span = std::chrono::duration<double, std::micro>(Clock::now() - call_).count();
  if (ops_) ops_->inside(false);
  if (ran_us_ >= 0) {
    enqueue_us_.push_back(ran_us_);
    gate_us_.push_back(span - ran_us_);
    copy_us_.push_back(ran_copy_us_);
  } else {
    enqueue_us_.push_back(span);
  }
  if (counters_) {
    CpuCounters::Reading c = counters_->read();
    cycles_.push_back(static_cast<double>(c.cycles - call_count_.cycles));
    instructions_.push_back(static_cast<double>(c.instructions - call_count_.instructions));
  }
  Sample s = sample(false);
  enqueue_cpu_us_.push_back(s.thread_cpu_us - call_sample_.thread_cpu_us);
  call_switches_ += (s.voluntary - call_sample_.voluntary) + (s.involuntary - call_sample_.involuntary);
  call_minor_faults_ += s.minor_faults - call_sample_.minor_faults;
  call_major_faults_ += s.major_faults - call_sample_.major_faults;
}

eval::HostUse HostMeter::stop() {
  Sample end = sample();
  eval::HostUse h;
  h.enqueue_us = enqueue_us_;
  h.enqueue_cpu_us = enqueue_cpu_us_;
  h.gate_us = gate_us_;
  h.copy_us = copy_us_;
  h.call_switches = call_switches_;
  h.thread_cpu_us = end.thread_cpu_us - at_start_.thread_cpu_us;
  h.process_cpu_us = end.process_cpu_us - at_start_.process_cpu_us;
  h.switches_voluntary = end.voluntary - at_start_.voluntary;
  h.switches_involuntary = end.involuntary - at_start_.involuntary;
  if (at_start_.total && end.total > at_start_.total)
    h.machine_busy = static_cast<double>(end.busy - at_start_.busy) / static_cast<double>(end.total - at_start_.total);
  h.call_minor_faults = call_minor_faults_;
  h.call_major_faults = call_major_faults_;
  h.probe = probe_;
  h.cpu = cpu_;
  h.thp_anon_kib = thp_anon_kib_;
  h.thp_file_kib = thp_file_kib_;
  h.call_cycles = cycles_;
  h.call_instructions = instructions_;
  counters_.reset();
  if (ops_) h.ops = ops_->per_call(enqueue_us_.size());
  ops_.reset();
  return h;
}

// The memory's latency to this thread: dependent loads, one from each 4 KiB page of a fresh
// 64 MiB buffer in a random order, each line flushed from the caches first, so that every
// load misses the caches and the TLB (a VM walks two page tables then). The line varies
// with the page so that the loads spread over the caches' sets. Some 20-40 ms.
static double memory_latency_ns() {
  constexpr size_t kPage = 4096, kPages = (size_t{64} << 20) / kPage;
  std::vector<uint32_t> order(kPages);
  for (size_t i = 0; i < kPages; ++i) order[i] = static_cast<uint32_t>(i);
  std::mt19937 rng(7);
  std::shuffle(order.begin(), order.end(), rng);
  std::unique_ptr<char[]> buf(new (std::nothrow) char[kPages * kPage]);
  if (!buf) return -1;  // no memory to spare: not measured
  auto slot = [&](uint32_t page) { return reinterpret_cast<uint32_t*>(buf.get() + page * kPage + (page % 64) * 64); };
  for (size_t i = 0; i < kPages; ++i) *slot(order[i]) = order[(i + 1) % kPages];
#if defined(__x86_64__)
  for (size_t i = 0; i < kPages; ++i) _mm_clflush(slot(static_cast<uint32_t>(i)));
  _mm_mfence();
#endif
  uint32_t at = order[0];
  auto t = Clock::now();
  for (size_t k = 0; k < kPages; ++k) at = *slot(at);
  double ns = std::chrono::duration<double, std::nano>(Clock::now() - t).count() / kPages;
  probe_sink = at;
  return ns;
}

eval::HostProbe probe_host(at::Device d, void* stream) {
  constexpr int kReps = 7, kOps = 32;
  eval::HostProbe p;
  auto us_since = [](Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); };
  CpuCounters counters;
  std::vector<double> ghz;
  p.cpu_us = median_us(kReps, [&] {
    CpuCounters::Reading c0 = counters.read();
    auto t = Clock::now();
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 20000; ++i) x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    probe_sink = x;
    double us = us_since(t);
    if (counters.ok()) ghz.push_back(static_cast<double>(counters.read().cycles - c0.cycles) / us / 1e3);
    return us;
  });
  if (!ghz.empty()) p.cpu_ghz = eval::stats_of(ghz).median;
  p.mem_ns = memory_latency_ns();
  if (d.is_cuda()) p.launch_us = device::launch_us(d, stream, kOps);
  at::Tensor x = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(d));
  auto ops = [&] {
    auto t = Clock::now();
    for (int i = 0; i < kOps; ++i) x.add_(1);
    return us_since(t) / kOps;
  };
  auto allocs = [&] {
    auto t = Clock::now();
    for (int i = 0; i < kOps; ++i) at::empty({256}, x.options());
    return us_since(t) / kOps;
  };
  ops();  // the first call's dispatch tables and kernel looked up
  p.op_us = median_us(kReps, ops);
  p.alloc_us = median_us(kReps, allocs);
  device::synchronize(d);
  return p;
}

Warmup warm_up(const rank::Rank& r, const std::function<bool()>& call) {
  const rank::Job& job = r.job;
  Warmup w;
  auto t0 = Clock::now();
  int most = std::max(job.warmup, 1);
  bool cuda = r.device.is_cuda();
  // The settings' calls, then on CUDA more until the clock has ramped up (within the budget):
  // 500 calls of 10 us are 5 ms, far less than an idle GPU takes to reach its clock.
  for (;;) {
    ++w.calls;
    if (!call()) break;
    // The clock only means something once the device has done the work: check it at
    // doubling counts (1, 2, 4, ...), so a fast call is not held up by waiting.
    if ((w.calls & (w.calls - 1)) == 0 || w.calls >= most) {
      device::synchronize(r.device);
      if (seconds_since(t0) > job.warmup_budget_s) break;
      if (w.calls >= most && (!cuda || clocks_up(device::read_clocks(r.device), Stability{}.min_clock_fraction))) break;
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
  bool cuda = r.device.is_cuda();
  auto timer = device::make_timer(r.device, stream, n);
  // CUDA: each call's stream held until its host starts the call, then the L2 evicted and
  // the judges aligned before the clock starts: the head start the gate gives a candidate
  // rank's host (jobs/gate.hpp: `ready`, the eviction, the barrier, then `go`). With the
  // eviction queued ahead of the call instead, host-bound references had ~7 us less of it
  // than their own code as a candidate (bench/results/h200-2026-12-04, call 15).
  std::unique_ptr<device::HostFlag> started = cuda ? std::make_unique<device::HostFlag>() : nullptr;
  eval::HostProbe probe = probe_host(r.device, stream);
  device::synchronize(r.device);
  r.client.barrier(r.world);
  auto t0 = Clock::now();
  HostMeter host;
  host.start(probe, r.job.profile_ops);
  int done = 0;
  while (done < n) {
    int i = done++;
    prepare(i);
    if (started) device::wait_flag(stream, started->flag(), static_cast<uint32_t>(i) + 1);
    if (cold) device::flush_l2(r.device, stream);
    device::heap_barrier(*r.heap, pkb_channel(*r.heap), stream);
    host.call_started();  // outside the events: its samples are not timed
    timer->start(i);      // CUDA: behind the hold, so it lands as the barrier ends
    if (started) started->set(static_cast<uint32_t>(i) + 1);  // the call starts to be enqueued
    bool ok = call(i);
    timer->stop(i);
    host.call_returned();
    after(i);
    if (!ok) break;
  }
  eval::CallTimes t;
  t.us = timer->elapsed_us();
  t.us.resize(done);
  device::synchronize(r.device);
  t.loop_us = seconds_since(t0) * 1e6;
  t.host = host.stop();
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
      r, stream, n,
      [&](int i) {
        r.client.phase(launch::phase::kReferenceTiming, i);  // the progress line counts the calls
        in = pc.inputs_for(kTimedKey + i);
        // The device idle before the call, as a candidate's is when its judge opens the gate:
        // else the inputs' making, queued ahead, would give the host a head start to enqueue
        // the reference's launches that a candidate never gets. (It did not explain why
        // launch-bound references run as candidates were slower on the H200 than their
        // judges timed them: bench/results/h200-2026-12-03, calls 6-8.)
        device::synchronize(r.device);
      },
      [&](int) {
        pc.reference->run(pc.ctx, in);
        return true;
      },
      [](int) {});
  t.warmup = w.calls;
  return t;
}

}  // namespace pkb::jobs::timing

namespace pkb::jobs::timing {

namespace {

std::string spread_unstable(const std::vector<double>& times, const Stability& rule) {
  eval::Stats st = eval::stats_of(times);
  if (rule.max_rel_iqr < 0 || st.median <= 0 || !eval::spread_beyond(st.iqr, st.median, rule.max_rel_iqr, rule.min_iqr_us))
    return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "IQR %.1f us on a median of %.1f us (over %.0f%% and %.0f us)", st.iqr, st.median,
                100 * rule.max_rel_iqr, rule.min_iqr_us);
  return buf;
}

std::string clocks_unstable(const eval::Clocks& c, const Stability& rule) {
  if (c.throttled) return "the GPU slowed down (thermal or hardware slowdown) during the timed calls";
  device::Clocks before{c.sm_mhz_before, c.max_sm_mhz, c.throttle_reasons, c.throttled};
  device::Clocks after{c.sm_mhz_after, c.max_sm_mhz, c.throttle_reasons, c.throttled};
  if (clocks_up(before, rule.min_clock_fraction) && clocks_up(after, rule.min_clock_fraction)) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "the SM clock was %d and %d MHz before and after, of %d", c.sm_mhz_before,
                c.sm_mhz_after, c.max_sm_mhz);
  return buf;
}

eval::Clocks clocks_from(const nlohmann::json& k) {
  return {k.at("sm_mhz_before"), k.at("sm_mhz_after"), k.at("max_sm_mhz"), k.at("throttle_reasons"), k.at("throttled")};
}

}  // namespace

Stability Stability::of(const rank::Job& job, bool cuda) {
  Stability s;
  s.max_rel_iqr = job.reference_max_iqr >= 0 ? job.reference_max_iqr : cuda ? kMaxRelIqr : -1;
  s.attempts = s.max_rel_iqr < 0 ? 1 : std::max(job.reference_attempts, 1);
  return s;
}

ReferenceTiming time_reference_until_stable(ProblemContext& pc, void* stream, const Stability& rule) {
  rank::Rank& r = pc.rank;
  ReferenceTiming out;
  std::vector<eval::Stats> slowest;
  std::vector<std::string> why;
  for (int a = 0; a < rule.attempts; ++a) {
    device::Clocks before = device::read_clocks(r.device);
    eval::CallTimes t = time_reference(pc, stream);
    device::Clocks after = device::read_clocks(r.device);
    eval::Clocks c{before.sm_mhz, after.sm_mhz, after.max_sm_mhz, before.throttle_reasons | after.throttle_reasons,
                   before.throttled || after.throttled};
    out.attempts.push_back({t, c});
    // Every judge decides on the same numbers: the slowest rank per call, and any rank's
    // clocks out of line.
    nlohmann::json mine = {{"us", t.us}, {"clocks", eval::to_json(c)}};
    std::vector<std::vector<double>> per_rank;
    std::string because;
    for (auto& blob : r.client.all_gather(r.rank, r.world, mine.dump())) {
      nlohmann::json j = nlohmann::json::parse(blob);
      per_rank.push_back(j.at("us").get<std::vector<double>>());
      if (because.empty()) because = clocks_unstable(clocks_from(j.at("clocks")), rule);
    }
    std::vector<double> calls = eval::slowest_per_call(per_rank);
    if (because.empty()) because = spread_unstable(calls, rule);
    slowest.push_back(eval::stats_of(calls));
    why.push_back(because);
    if (because.empty()) break;
  }
  // The stable attempt with the lowest median; else the least spread one.
  int best = -1;
  for (size_t a = 0; a < slowest.size(); ++a)
    if (why[a].empty() && (best < 0 || slowest[a].median < slowest[best].median)) best = static_cast<int>(a);
  out.stable = best >= 0;
  if (best < 0) {
    best = 0;
    auto rel = [&](size_t a) { return slowest[a].median > 0 ? slowest[a].iqr / slowest[a].median : 0.0; };
    for (size_t a = 1; a < slowest.size(); ++a)
      if (rel(a) < rel(best)) best = static_cast<int>(a);
  }
  out.kept = best;
  out.why = why[best];
  return out;
}

}  // namespace pkb::jobs::timing
