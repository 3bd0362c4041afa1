// pkb eval on a judge rank: the side of an evaluation that holds the secret seed, the
// reference and its answers, and never loads a candidate.
//
// First, before any candidate rank touches its GPU, the judges time the reference (unless
// the parent has that timing cached) and give its memory back. Then each judge maps its
// candidate rank's harness (eval/layout.hpp: the gate's flags and the set the candidate is
// called on), calibrates the gate (jobs/gate.hpp) on pkb's own empty calls, and drives the
// candidate rank over their pair's messages (eval/protocol.hpp): it writes every call's
// fresh inputs and poisons its outputs, opens the gate, copies the outputs into memory of
// its own the moment the call's work on the candidate's stream ends, times the call with
// events on its own stream, and judges the copies against the reference it runs here, on
// inputs it made itself. The candidate's process never holds the seed, the reference's
// outputs, the captures, the comparison or the clock that counts.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "device/device.hpp"
#include "eval/compare.hpp"
#include "eval/layout.hpp"
#include "eval/protocol.hpp"
#include "eval/reports.hpp"
#include "eval/stats.hpp"
#include "heap/heap.hpp"
#include "jobs/context.hpp"
#include "jobs/gate.hpp"
#include "jobs/harness.hpp"
#include "jobs/jobs.hpp"
#include "jobs/timing.hpp"
#include "launch/phases.hpp"
#include "ref/context.hpp"
#include "tensor/init.hpp"
#include "tensor/save.hpp"

namespace pkb::jobs {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using eval::Failure;
using eval::Verdict;
using eval::protocol::Pair;
namespace proto = eval::protocol;
namespace phase = launch::phase;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// How long a wrong call's live outputs may take to become right (late work) before the call
// counts as merely wrong.
constexpr double kLateWorkWaitMs = 3000;

Failure make_failure(Verdict v, const std::string& ph, int64_t trial, const std::string& output,
                     const std::string& reason, const std::string& detail) {
  Failure f;
  f.verdict = v;
  f.phase = ph;
  f.trial = trial;
  f.output = output;
  f.reason = reason;
  f.detail = detail;
  return f;
}

// What the judges agreed after a step: the first failure by rank, and whether to stop.
struct Decision {
  std::optional<Failure> failure;
  bool stop = false;
};

// What a judge rank makes once and its problems share: its stream, the pair's messages,
// its mappings of the candidate rank's memory (made for the largest problem), the gate
// and its sequence numbers.
struct Shared {
  void* stream = nullptr;
  std::unique_ptr<Pair> pair;
  std::unique_ptr<heap::Mapping> device, host;
  std::unique_ptr<JudgeGate> gate;
  uint32_t seq = 0;
};

// The judges' timing of one problem's reference (before any candidate rank exists).
struct ReferenceTimed {
  timing::ReferenceTiming timing;
  double peak_bytes = 0;
  double ms = 0;

  // A judge's report of it alone: the report that JudgeProblem completes, or the whole of
  // it where the judges end the ranks for fresh ones.
  eval::JudgeReport report() const {
    eval::JudgeReport r;
    r.reference = timing.attempts;
    r.reference_kept = timing.kept;
    r.reference_stable = timing.stable;
    r.reference_unstable = timing.why;
    r.reference_peak_bytes = peak_bytes;
    r.phase_ms["reference_timing"] = ms;
    return r;
  }
};

// One problem judged: its reference and answers, the candidate rank's set viewed through
// the shared mappings, the calibration, the trials and the timed calls.
class JudgeProblem {
 public:
  JudgeProblem(rank::Rank& r, size_t k, Shared& sh, const std::optional<ReferenceTimed>& timed)
      : r_(r), job_(r.job), plan_(r.job.eval_problem(k)), pc_(r, r.job.specs.at(k)), sh_(sh), pair_(*sh.pair),
        stream_(sh.stream) {
    if (timed) report_ = timed->report();
  }

  json run() {
    auto t0 = Clock::now();
    view_candidate();
    calibrate();
    report_.phase_ms["candidate_setup"] = ms_since(t0);
    t0 = Clock::now();
    Decision d = trials();
    report_.phase_ms["trials"] = ms_since(t0);
    if (!d.failure && job_.timing) {
      t0 = Clock::now();
      d = timing();
      tell(d);
      report_.phase_ms["timing"] = ms_since(t0);
    }
    report_.failure = d.failure;
    return eval::to_json(report_);
  }

 private:
  // ---- the candidate rank's harness, viewed here ------------------------------------------

  void view_candidate() {
    layout_ = eval::plan_harness(pc_.spec, job_.size, r_.world, job_.dtype.empty() ? pc_.spec.dtype : job_.dtype);
    if (sh_.device->bytes() < layout_.device_bytes() || (layout_.host_bytes() && sh_.host->bytes() < layout_.host_bytes()))
      throw eval::protocol::ProtocolError("the candidate rank's memory is too small for " + pc_.spec.slug);
    harness_ = std::make_unique<Harness>(pc_.spec, pc_.ctx.vars(), pc_.dt, layout_, static_cast<char*>(sh_.device->data()),
                                         static_cast<char*>(sh_.host->data()), r_.device);
    gate_ = sh_.gate.get();
    trial_capture_ = std::make_unique<Captures>(harness_->out, 1, r_.device);
  }

  // The next call's number on the gate.
  uint32_t next_seq() { return ++sh_.seq; }

  // What the gate costs a call that does nothing: the candidate rank makes pkb's own empty
  // calls through it before any candidate code is loaded there, and this judge times them
  // exactly as it times the candidate's calls (CUDA only).
  void calibrate() {
    if (!r_.device.is_cuda() || !job_.timing) return;
    r_.client.phase(phase::kCalibration);
    const int n = proto::kCalibrationCalls;
    auto timer = device::make_timer(r_.device, stream_, n);
    for (int i = 0; i < n; ++i) {
      json m = pair_.receive(proto::kFill);
      if (m.value("call", -1) != i) throw proto::ProtocolError("calibration call " + m.dump());
      gate_->sync();
      uint32_t seq = next_seq();
      gate_->timed(seq, *timer, i, job_.cache == "cold", *r_.heap, harness_->out, nullptr);
      pair_.send(proto::kFilled, {{"call", i}, {"seq", seq}});
    }
    eval::Stats o = eval::stats_of(timer->elapsed_us());
    report_.gate = eval::GateOverhead{o.median, o.iqr, n, o.p25};
  }

  // Fresh inputs of `key` into the candidate's set, its outputs poisoned (both in place
  // when this returns); the pristine copy stays here.
  Inputs fill(int64_t key, bool flip = false) {
    Inputs pristine = pc_.inputs_for(key);
    for (size_t i = 0; i < pristine.size(); ++i) harness_->in[i].copy_(pristine.at(i));
    for (auto& y : harness_->out) eval::poison(y, flip);
    device::synchronize(r_.device);  // in place before the candidate rank is told
    return pristine;
  }

  // The host-declared outputs into `into` (the gate copies the device ones on the stream),
  // and on the CPU device all of them: once the candidate rank says the call returned.
  void capture_on_host(const std::vector<at::Tensor>& into) {
    for (size_t i = 0; i < into.size(); ++i)
      if (!r_.device.is_cuda() || harness_->out[i].is_cpu()) into[i].copy_(harness_->out[i]);
  }

  // ---- judging one call ---------------------------------------------------------------------

  std::optional<Failure> check_inputs(const Inputs& pristine, const std::string& ph, int64_t trial) {
    for (size_t i = 0; i < pristine.size(); ++i)
      if (pc_.spec.inputs[i].readonly && !harness_->in[i].equal(pristine.at(i)))
        return make_failure(Verdict::integrity_violation, ph, trial, pc_.spec.inputs[i].name, "input_mutated",
                            "the candidate changed the read-only input '" + pc_.spec.inputs[i].name + "'");
    return std::nullopt;
  }

  // `key`: the call's input key (a trial, or kTimedKey + a timed call), whose inputs a
  // ties check draws again when it asks for them.
  std::optional<Failure> compare_outputs(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want,
                                         const std::string& ph, int64_t key, bool count_tolerated) {
    const int64_t trial = key;
    ref::DrawnInputs inputs(pc_.ctx, *pc_.reference, key);  // drawn only if a ties check asks
    for (size_t i = 0; i < got.size(); ++i) {
      eval::Mismatch m = eval::compare_output(pc_.spec.outputs[i], i, got, want, {*pc_.reference, pc_.ctx, inputs});
      if (!m.ok) {
        Failure f = make_failure(Verdict::wrong, ph, trial, pc_.spec.outputs[i].name, m.reason, m.detail);
        f.mismatch = m.to_json();
        f.mismatch.erase("reason");
        f.mismatch.erase("detail");
        return f;
      }
      if (m.bad > 0 && count_tolerated) {  // within the output's mismatch allowance: said in the verdict
        ++report_.tolerated_outputs;
        report_.tolerated_max = std::max(report_.tolerated_max, m.bad);
      }
    }
    return std::nullopt;
  }

  // A call's captured outputs (at the sizes the call reported) against
  // the reference's. When they are wrong but the live outputs (when still this call's) are
  // right, the work landed after the call's own work on ctx->stream ended.
  std::optional<Failure> judge_call(const std::vector<at::Tensor>& captured, const ReportedSizes& sizes, bool live,
                                    const std::vector<at::Tensor>& want, const std::string& ph, int64_t trial) {
    std::vector<at::Tensor> got;
    std::string output;
    std::string bad = narrow_to_reported(pc_.spec, captured, sizes, got, output);
    if (!bad.empty()) return make_failure(Verdict::wrong, ph, trial, output, "shape", bad);
    std::optional<Failure> f = compare_outputs(got, want, ph, trial, true);
    if (!f || !live) return f;
    std::vector<at::Tensor> later;
    if (!narrow_to_reported(pc_.spec, harness_->out, sizes, later, output).empty()) return f;
    // Work that lands late may land well after the call (a host thread working through a
    // backlog of calls): the live outputs get a while to become right.
    auto t0 = Clock::now();
    while (compare_outputs(later, want, ph, trial, false)) {
      if (ms_since(t0) > kLateWorkWaitMs) return f;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return make_failure(Verdict::integrity_violation, ph, trial, f->output, "late_work",
                        "the output was wrong when the call's work on ctx->stream ended (" + f->detail +
                            ") and right later: work ran on another stream or thread, or after pkb_run returned; "
                            "order all work on ctx->stream (join forked streams back) and finish before returning");
  }

  // Every judge learns whether any judge found a failure or wants to stop; the first
  // failure by rank is the verdict's.
  Decision agree(const std::optional<Failure>& mine, bool stop, int trial = -1) {
    r_.client.phase(phase::kSync, trial);
    json m = {{"failure", mine ? mine->to_json() : json()}, {"stop", stop}};
    Decision d;
    auto all = r_.client.all_gather(r_.rank, r_.world, m.dump());
    for (int q = 0; q < r_.world; ++q) {
      json x = json::parse(all[q]);
      d.stop = d.stop || x["stop"].get<bool>();
      if (!d.failure && !x["failure"].is_null()) {
        d.failure = Failure::from_json(x["failure"]);
        if (d.failure->rank < 0) d.failure->rank = q;
      }
    }
    return d;
  }

  void tell(const Decision& d) {
    pair_.send(proto::kDecision, {{"failure", d.failure ? d.failure->to_json() : json()}, {"stop", d.stop}});
  }

  // A message that is not what pkb's candidate rank sends at this point: something else
  // wrote to its channel.
  Failure protocol_failure(const std::string& ph, int64_t trial, const std::string& what) {
    return make_failure(Verdict::integrity_violation, ph, trial, "", "protocol",
                        "the candidate rank's messages to its judge broke pkb's protocol (" + what +
                            "): something other than pkb wrote to the rank's channel");
  }

  // The candidate rank's own failure in a message (its call returned an error, the sandbox
  // denied something), or nothing.
  static std::optional<Failure> reported_failure(const json& m) {
    if (m.value("failure", json()).is_null()) return std::nullopt;
    return Failure::from_json(m["failure"]);
  }

  static ReportedSizes sizes_of(const json& sizes) { return sizes.get<ReportedSizes>(); }

  // The trial's inputs (made again: the reference may have written to those it may
  // change), the candidate's captured outputs, the reference's.
  void save(int64_t trial, const std::vector<at::Tensor>& captured, const ReportedSizes& sizes,
            const std::vector<at::Tensor>& ref) {
    const std::string dir = pc_.save_dir();
    if (dir.empty()) return;
    Inputs in = pc_.inputs_for(trial);
    std::vector<at::Tensor> got;
    std::string output;
    if (!narrow_to_reported(pc_.spec, captured, sizes, got, output).empty()) got = captured;
    std::string rk = "/rank_" + std::to_string(r_.rank) + ".pt";
    for (auto sub : {"/reference", "/candidate", "/inputs"}) std::filesystem::create_directories(dir + sub);
    tensor::save_outputs(dir + "/reference" + rk, ref);
    tensor::save_outputs(dir + "/candidate" + rk, got);
    tensor::save_named(dir + "/inputs" + rk, in.names(), in.tensors());
    std::ofstream(dir + "/trial.txt") << trial << "\n";
  }

  // ---- trials -------------------------------------------------------------------------------

  Decision trials() {
    auto t0 = Clock::now();
    Decision d;
    for (int t = 0; t < job_.trials; ++t) {
      r_.client.phase(phase::kTrial, t);
      Inputs pristine = fill(t, t % 2);
      const std::vector<at::Tensor>& captured = (*trial_capture_)[0];
      uint32_t seq = next_seq();
      gate_->trial(seq, harness_->out, &captured);
      pair_.send(proto::kInputs, {{"trial", t}, {"seq", seq}});
      r_.client.phase(phase::kAwaitCandidate, t);
      std::optional<Failure> fail;
      json ran;
      try {
        ran = pair_.receive(proto::kRan);
        if (ran.value("trial", -1) != t) throw proto::ProtocolError("a result for trial " + ran.value("trial", json()).dump());
        fail = reported_failure(ran);
      } catch (const std::exception& e) {
        fail = protocol_failure(phase::kTrial, t, e.what());
      }
      r_.client.phase(phase::kTrial, t);
      if (!fail) {
        gate_->sync();
        capture_on_host(captured);
      }
      if (!fail) fail = check_inputs(pristine, phase::kTrial, t);
      // Every judge runs the reference, whatever its candidate did: it communicates. On the
      // pristine inputs themselves (checked above), and no copy to check the reference
      // itself (dryrun and validate do): the judge holds a large problem's inputs once.
      std::vector<at::Tensor> want = pc_.run_reference(pristine);
      ReportedSizes sizes;
      if (!fail) {
        sizes = sizes_of(ran.at("sizes"));
        fail = judge_call(captured, sizes, true, want, phase::kTrial, t);
      }
      report_.trials_run = t + 1;
      if (t == 0 || fail) save(t, captured, sizes.empty() ? default_sizes() : sizes, want);
      bool out_of_time = t + 1 >= job_.min_trials && ms_since(t0) > 1000 * job_.trials_budget_s;
      d = agree(fail, out_of_time || t + 1 == job_.trials, t);
      tell(d);
      if (d.failure || d.stop) break;
    }
    return {d.failure, false};
  }

  // The outputs' declared sizes (what a call that reported nothing has).
  ReportedSizes default_sizes() const {
    ReportedSizes s;
    for (auto& y : harness_->out) s.push_back(y.sizes().vec());
    return s;
  }

  // ---- timing: the candidate rank's timed calls, their inputs and their checks ----------------

  // Warm-up inputs for the candidate rank's own warm-up and escape check; then every timed
  // call through the gate: its inputs written and outputs poisoned here, the L2 evicted,
  // the judges aligned, the call timed on this judge's stream and, for the calls chosen in
  // secret, its outputs copied out as it ends.
  Decision timing() {
    r_.client.phase(phase::kTimingSetup);
    fill(timing::kWarmKey);
    if (r_.rank == 0 && r_.device.is_cuda()) {  // what a copy-bound candidate should reach
      std::vector<size_t> sizes;  // the outputs in device memory, one copy each (as @reference copies them)
      for (auto& y : harness_->out)
        if (y.is_cuda()) sizes.push_back(y.nbytes());
      size_t bytes = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
      report_.device_copy = {{"bytes", bytes}, {"copies", sizes.size()}, {"median_us", device::copy_us(r_.device, sizes)}};
    }
    probe_at_candidate();
    pair_.send(proto::kInputs, {{"warm", true}});
    r_.client.phase(phase::kAwaitCandidate);
    std::optional<Failure> fail;
    json timed;
    int n = 0;
    std::vector<int> captured;
    try {
      n = pair_.receive(proto::kTiming).at("iters").get<int>();
      if (n < 1 || n > job_.iters) throw proto::ProtocolError("asked for " + std::to_string(n) + " timed calls");
      captured = choose_captured(n);
      captures_ = std::make_unique<Captures>(harness_->out, static_cast<int>(captured.size()), r_.device);
      std::map<int, int> slot_of;  // timed call -> capture
      for (size_t k = 0; k < captured.size(); ++k) slot_of[captured[k]] = static_cast<int>(k);
      auto slot = [&](int i) -> const std::vector<at::Tensor>* {
        auto it = slot_of.find(i);
        return it == slot_of.end() ? nullptr : &(*captures_)[it->second];
      };
      auto timer = device::make_timer(r_.device, stream_, n);
      device::Clocks before = device::read_clocks(r_.device);
      timing::HostMeter machine;  // only its machine_busy says something here: this thread waits
      machine.start();
      r_.client.phase(phase::kAwaitCandidate);
      // Every timed call's inputs, made here just before the call, so no call sees
      // another's and none exist before their call.
      int i = 0;
      for (;; ++i) {
        json m = pair_.receive_any();
        gate_->sync();  // the previous call is over, its outputs copied
        if (i > 0 && slot(i - 1)) capture_on_host(*slot(i - 1));
        if (m["type"] == proto::kTimed) {
          timed = m;
          break;
        }
        if (m["type"] != proto::kFill || m.value("call", -1) != i || i >= n)
          throw proto::ProtocolError("a '" + m["type"].get<std::string>() + "' message at timed call " + std::to_string(i));
        r_.client.phase(phase::kTimedCall, i);  // the progress line counts the calls
        last_inputs_ = fill(timing::kTimedKey + i, i % 2);
        uint32_t seq = next_seq();
        gate_->timed(seq, *timer, i, job_.cache == "cold", *r_.heap, harness_->out, slot(i));
        pair_.send(proto::kFilled, {{"call", i}, {"seq", seq}});
      }
      device::Clocks after = device::read_clocks(r_.device);
      report_.machine_busy = machine.stop().machine_busy;
      probe_at_candidate();
      report_.clocks = eval::Clocks{before.sm_mhz, after.sm_mhz, after.max_sm_mhz, after.throttle_reasons,
                                    before.throttled || after.throttled};
      report_.captured_calls = static_cast<int>(captured.size());
      if (r_.device.is_cuda()) {
        // The judge's clock, less what the gate costs a call that does nothing.
        std::vector<double> us = timer->elapsed_us();
        us.resize(i);
        for (double& x : us) x = std::max(0.0, x - report_.gate->taken_us);
        report_.candidate = eval::CallTimes{us, 0, 0};
      }
      fail = reported_failure(timed);
    } catch (const std::exception& e) {
      fail = protocol_failure("timing", -1, e.what());
    }
    r_.client.phase(phase::kTimingChecks);
    if (!fail) fail = check_timed(timed, n, captured);
    return agree(fail, false);
  }

  // The judge's own host probe on the CPU it timed the reference on (JudgeReport::
  // probes_at_candidate), while its candidate rank waits on it: before the warm-up's inputs
  // are announced, and once the last timed call is in.
  void probe_at_candidate() {
    if (!r_.device.is_cuda()) return;
    r_.to_timing_cpu();
    report_.probes_at_candidate.push_back(timing::probe_host(r_.device, stream_));
    r_.to_partner_cpu();
  }

  // The timed calls whose outputs are captured: all when the slots hold them, else a
  // secret sample drawn from the run's seed, the same on every judge.
  std::vector<int> choose_captured(int n) {
    std::vector<int> calls(n);
    std::iota(calls.begin(), calls.end(), 0);
    if (plan_.captures < n) {
      std::mt19937_64 pick(tensor::derive_seed(job_.seed, timing::kTimedKey, 7));
      std::shuffle(calls.begin(), calls.end(), pick);
      calls.resize(std::max(plan_.captures, 1));
      std::sort(calls.begin(), calls.end());
    }
    return calls;
  }

  // The last call's read-only inputs, then every captured call against the reference on
  // its own inputs made again: replayed, cached, skipped or late work shows here. Late
  // work is named wherever a call shows it (only the last call still has its live
  // outputs); else the first wrong call.
  std::optional<Failure> check_timed(const json& timed, int n, const std::vector<int>& captured) {
    int calls = timed.value("calls", 0);
    if (calls != n) return protocol_failure("timing", -1, std::to_string(calls) + " of " + std::to_string(n) + " calls");
    if (!last_inputs_.tensors().empty())
      if (auto f = check_inputs(last_inputs_, "timing", timing::kTimedKey + n - 1)) return f;
    json sizes = timed.at("sizes");
    if (static_cast<int>(sizes.size()) != n) return protocol_failure("timing", -1, "sizes of " + std::to_string(sizes.size()) + " calls");
    std::optional<Failure> first;
    for (size_t k = 0; k < captured.size(); ++k) {
      int i = captured[k];
      Inputs pristine = pc_.inputs_for(timing::kTimedKey + i);
      std::vector<at::Tensor> want = pc_.run_reference(pristine);
      std::optional<Failure> f =
          judge_call((*captures_)[static_cast<int>(k)], sizes_of(sizes[i]), i == n - 1, want, "timing", timing::kTimedKey + i);
      ++report_.timed_calls_checked;
      if (!f) continue;
      f->detail = "timed call " + std::to_string(i) + ": " + f->detail;
      if (f->reason == "late_work") return f;
      if (!first) first = f;
    }
    return first;
  }

  rank::Rank& r_;
  const rank::Job& job_;
  const rank::Job::EvalProblem& plan_;
  ProblemContext pc_;
  Shared& sh_;
  Pair& pair_;
  void* stream_;
  JudgeGate* gate_ = nullptr;
  eval::JudgeReport report_;
  eval::HarnessLayout layout_;
  std::unique_ptr<Harness> harness_;
  std::unique_ptr<Captures> trial_capture_, captures_;
  Inputs last_inputs_;
};

// A judge rank: the references timed first (those the parent has no timing of), before any
// candidate rank touches its GPU; then the candidate rank's memory mapped once, and each
// problem judged in turn. Where a timing stayed unstable and the parent may start the ranks
// again (job.reference_redraws), the judges end here instead, and every candidate rank with
// them: the disturbance seen on VMs follows a process, so fresh judges time it again.
class JudgeRank {
 public:
  explicit JudgeRank(rank::Rank& r) : r_(r), job_(r.job) {}

  json run() {
    sh_.stream = device::make_stream(r_.device);
    r_.make_heap(0);  // its signal pads align the judges' timed calls
    const size_t n = job_.specs.size();
    const bool several = n > 1;
    std::vector<std::optional<ReferenceTimed>> timed(n);
    r_.to_timing_cpu();  // where the candidate rank will time its calls (launch/cpus.hpp)
    for (size_t k = 0; k < n; ++k) {
      if (!job_.timing || !job_.eval_problem(k).time_reference) continue;
      if (several) r_.client.set_problem(std::filesystem::path(job_.specs[k]).stem().string());
      auto t0 = Clock::now();
      device::reset_peak(r_.device);
      ProblemContext pc(r_, job_.specs[k]);
      ReferenceTimed t;
      t.timing = timing::time_reference_until_stable(pc, sh_.stream, timing::Stability::of(job_, r_.device.is_cuda()));
      t.peak_bytes = static_cast<double>(device::peak_allocated(r_.device));
      t.ms = ms_since(t0);
      timed[k] = t;
      device::release_cached_memory(r_.device);
    }
    r_.to_partner_cpu();  // off the CPU its candidate rank times on
    // Every judge agreed on each timing's stability (they decide on the same numbers).
    bool redraw = false;
    for (auto& t : timed) redraw = redraw || (t && !t->timing.stable && job_.reference_redraws > 0);
    // The candidate ranks start only now, on a device with the references' memory back.
    device::release_cached_memory(r_.device);
    r_.client.barrier(r_.world);
    if (r_.rank == 0) r_.client.set(proto::kReferenceDone, redraw ? proto::kRedraw : "1");
    if (redraw) {
      json reports = json::array();
      for (auto& t : timed) reports.push_back(t ? eval::to_json(t->report()) : json());
      return {{"redraw", true}, {"problems", reports}};
    }
    map_candidate();
    json reports = json::array();
    for (size_t k = 0; k < n; ++k) {
      if (several) r_.client.set_problem(std::filesystem::path(job_.specs[k]).stem().string());
      reports.push_back(JudgeProblem(r_, k, sh_, timed[k]).run());
      if (several) r_.client.part(reports.back().dump());  // kept, whatever a later problem does
      device::release_cached_memory(r_.device);  // the next problem starts from an empty cache
    }
    return several ? json{{"problems", reports}} : reports[0];
  }

 private:
  // The candidate rank's harness regions (sized for its largest problem), mapped here.
  void map_candidate() {
    sh_.pair = std::make_unique<Pair>(r_.client, Pair::Side::judge, r_.rank);
    r_.client.phase(phase::kAwaitCandidate);
    json ready = sh_.pair->receive(proto::kReady);
    size_t span = ready.at("heap_span").get<size_t>(), host = ready.at("host_bytes").get<size_t>();
    bool cuda = r_.device.is_cuda();
    std::string key = heap::heap_key(cuda, r_.rank);
    sh_.device = cuda ? heap::import_cuda(r_.client, proto::kCandidates, key, r_.device.index(), span)
                      : heap::import_host(r_.client, proto::kCandidates, key, span);
    sh_.host = heap::import_host(r_.client, proto::kCandidates, proto::kHostRegion + std::string("/") + std::to_string(r_.rank),
                                 host);
    sh_.gate = std::make_unique<JudgeGate>(r_.device, sh_.stream, static_cast<char*>(sh_.device->data()), *r_.heap);
  }

  rank::Rank& r_;
  const rank::Job& job_;
  Shared sh_;
};

}  // namespace

json run_judge(rank::Rank& r) { return JudgeRank(r).run(); }

}  // namespace pkb::jobs
