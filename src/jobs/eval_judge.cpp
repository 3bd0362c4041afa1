// pkb eval on a judge rank: the side of an evaluation that holds the secret seed, the
// reference's answers and the clock, and never loads a candidate.
//
// Each judge maps its candidate rank's harness (eval/layout.hpp: the gate's flags and the
// set the candidate is called on), calibrates the gate (jobs/gate.hpp) on pkb's own empty
// calls, and drives the candidate rank over their pair's messages (eval/protocol.hpp): it
// writes every call's fresh inputs and poisons its outputs, opens the gate, times the call
// with events on its own stream, copies the candidate's outputs into memory of its own the
// moment the call's work on the candidate's stream ends, and judges the copies against the
// reference it runs here, on inputs it made itself. The timed calls are the reference's
// (run in the candidate rank: alone before the candidate is loaded, then in blocks
// alternating with the candidate's) and the candidate's: the judges choose each call's side
// and when the rounds end (eval/interleave.hpp), agreeing on every round's times. The
// candidate's process never holds the seed, the reference's answers, the captures, the
// comparison or the clock that counts.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include "device/device.hpp"
#include "eval/compare.hpp"
#include "eval/layout.hpp"
#include "eval/protocol.hpp"
#include "eval/reports.hpp"
#include "eval/stats.hpp"
#include "heap/heap.hpp"
#include "io/clock.hpp"
#include "jobs/context.hpp"
#include "jobs/gate.hpp"
#include "jobs/harness.hpp"
#include "jobs/host_watch.hpp"
#include "jobs/jobs.hpp"
#include "jobs/timing.hpp"
#include "launch/phases.hpp"
#include "launch/stopped.hpp"
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

using io::ms_since;

// How long a wrong call's live outputs may take to become right (late work) before the call
// counts as merely wrong.
constexpr double kLateWorkWaitMs = 3000;
// The most candidate calls after the rounds, each judged as it ends (JudgeProblem::timing).
constexpr int kCallsAfterRounds = 4;

Failure make_failure(Verdict v, const std::string& ph, int64_t trial, const std::string& output,
                     const std::string& reason, const std::string& detail) {
  Failure f = Failure::of(v, ph, reason, detail);
  f.trial = trial;
  f.output = output;
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
struct JudgeShared {
  void* stream = nullptr;
  std::unique_ptr<Pair> pair;
  std::unique_ptr<heap::Mapping> device, host;
  std::unique_ptr<JudgeGate> gate;
  uint32_t seq = 0;
  pid_t candidate = 0;  // the candidate rank's process, as it said before loading a candidate
  std::set<pid_t> pkb_threads;  // its threads as each baseline ended: none of a candidate's yet
};

// One problem judged: its reference and answers, the candidate rank's set viewed through
// the shared mappings, the calibration, the baseline, the trials and the timed rounds.
class JudgeProblem {
 public:
  JudgeProblem(rank::Rank& r, size_t k, JudgeShared& sh)
      : r_(r), job_(r.job), plan_(r.job.eval_problem(k)), pc_(r, r.job.specs.at(k)), sh_(sh), pair_(*sh.pair),
        stream_(sh.stream) {}

  json run() {
    auto t0 = Clock::now();
    view_candidate();
    calibrate();
    report_.phase_ms["candidate_setup"] = ms_since(t0);
    if (job_.timing) {
      t0 = Clock::now();
      Decision b = baseline();
      report_.phase_ms["baseline"] = ms_since(t0);
      if (b.failure) {
        report_.failure = b.failure;
        return eval::to_json(report_);
      }
    }
    t0 = Clock::now();
    Decision d = trials();
    report_.phase_ms["trials"] = ms_since(t0);
    if (!d.failure && job_.timing) {
      // The reference's memory back: the candidate rank times its own in the rounds (where
      // eval/memory_plan.hpp holds the two at once, this judge's own calls at the rounds'
      // ends take it again).
      device::release_cached_memory(r_.device);
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
                                         const std::string& ph, int64_t key, bool count_tolerated, bool explain = true) {
    const int64_t trial = key;
    ref::DrawnInputs inputs(pc_.ctx, *pc_.reference, key);  // drawn only if a ties check asks
    for (size_t i = 0; i < got.size(); ++i) {
      eval::Mismatch m =
          eval::compare_output(pc_.spec.outputs[i], i, got, want, {*pc_.reference, pc_.ctx, inputs}, explain);
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
    // backlog of calls): the live outputs get a while to become right. Nothing but late work
    // changes them until the next call's inputs, so once right they stay right: looked at
    // after waits that double from 20 ms, with a yes or no each time (not the whole diagnosis),
    // the judges' wait costs the machine little while other work runs on it.
    auto t0 = Clock::now();
    auto still_wrong = [&] { return compare_outputs(later, want, ph, trial, /*count_tolerated=*/false, /*explain=*/false); };
    for (int wait_ms = 20; still_wrong(); wait_ms = std::min(2 * wait_ms, 320)) {
      if (ms_since(t0) > kLateWorkWaitMs) return f;
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
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
      std::vector<at::Tensor> want = pc_.run_reference(pristine).outputs;
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

  // ---- timing: both sides' timed calls, their inputs and their checks ------------------------

  // Serves the calls of a timed session of at most `most` calls (each announced as phase
  // `ph`, with its number): for each request, call `i`'s
  // fresh inputs (key base + i) written and its outputs poisoned, the call timed through
  // the gate on this judge's clock. `next(i, m)` sees each request first (the candidate
  // rank's own reading of the last call on the CPU device, in m["us"]; request `most`
  // comes after the last call) and answers: the call's side and capture, or that the
  // session is over. Returns the candidate rank's closing message (`timed`), or throws a
  // ProtocolError.
  struct Next {
    bool stop = false;
    eval::interleave::Side side = eval::interleave::Side::reference;
    const std::vector<at::Tensor>* capture = nullptr;
  };
  json serve(const char* ph, int64_t base, int most, device::CallTimer& timer,
             const std::function<Next(int, const json&)>& next) {
    const std::vector<at::Tensor>* pending = nullptr;  // the last call's capture, done on the host once it ended
    bool stopped = false;
    for (int i = 0;; ++i) {
      json m = pair_.receive_any();
      gate_->sync();  // the previous call is over, its outputs copied
      if (pending) capture_on_host(*pending);
      pending = nullptr;
      if (m["type"] == proto::kTimed) return m;
      if (m["type"] != proto::kFill || m.value("call", -1) != i || i > most || stopped)
        throw proto::ProtocolError("a '" + m["type"].get<std::string>() + "' message at timed call " + std::to_string(i));
      Next n = next(i, m);
      n.stop = n.stop || i == most;  // the request after the session's last call ends it
      if (n.stop) {
        stopped = true;
        pair_.send(proto::kFilled, {{"call", i}, {"stop", true}});
        continue;
      }
      r_.client.phase(ph, i);  // the progress line counts the calls
      Inputs pristine = fill(base + i, i % 2);
      last_fill_ = pristine;
      if (n.side == eval::interleave::Side::candidate) last_inputs_ = std::move(pristine);
      uint32_t seq = next_seq();
      gate_->timed(seq, timer, i, job_.cache == "cold", *r_.heap, harness_->out, n.capture);
      pending = n.capture;
      pair_.send(proto::kFilled, {{"call", i}, {"seq", seq}, {"side", eval::interleave::side_name(n.side)}});
    }
  }

  // The reference in this judge's own process, `n` calls on the last timed call's inputs,
  // on its candidate rank's timing CPU, timed as the gate times that rank's calls (the L2
  // evicted, the judges aligned, events on this stream; the host clock on the CPU device).
  // No candidate code ever runs in this process: the machine's pace, which the bound on the
  // reference beside the candidate allows for (eval/interleave.hpp). The candidate rank,
  // waiting for its next call, is held stopped meanwhile: no thread of the candidate's runs
  // on the host (a spinning one would slow this process too and buy itself the credit).
  // Zeros (not measured) where it cannot be held. Only where the memory plan holds the
  // reference's working memory twice (plan_.judge_paces).
  // Then, the rank still held, kProbes of the device probe (device::probe), timed alone:
  // device-only work, so unlike the reference's calls its time does not follow the host's
  // pace; it moves only where other work shares the GPU, such as a kernel the candidate left
  // running (a process held still keeps its kernels running).
  static constexpr int kProbes = 3;
  struct JudgePace {
    std::vector<double> reference_us, probe_us;
  };
  JudgePace judge_reference(int n) {
    r_.client.phase(phase::kReferenceTiming);
    launch::Stopped held(sh_.candidate);
    if (!held.ok()) return {std::vector<double>(n, 0.0), std::vector<double>(kProbes, 0.0)};
    // On the CPU its timed calls run on (launch/cpus.hpp; free while it is held): a host
    // disturbance that stays with that CPU slows these calls as it slows both sides'.
    struct OnTimingCpu {
      rank::Rank& r;
      explicit OnTimingCpu(rank::Rank& rank) : r(rank) { r.to_timing_cpu(); }
      ~OnTimingCpu() { r.to_partner_cpu(); }
    } on_timing_cpu(r_);
    auto timer = device::make_timer(r_.device, stream_, n);
    for (int i = 0; i < n; ++i) {
      Inputs in = last_fill_.clone();
      Outputs out = ref::make_outputs(pc_.ctx);
      if (job_.cache == "cold") device::flush_l2(r_.device, stream_);
      device::heap_barrier(*r_.heap, timing::pkb_channel(*r_.heap), stream_);
      timer->start(i);
      pc_.reference->run(pc_.ctx, in, out);
      timer->stop(i);
      device::synchronize(r_.device);
    }
    JudgePace pace{timer->elapsed_us(), {}};
    auto probes = device::make_timer(r_.device, stream_, kProbes);
    for (int i = 0; i < kProbes; ++i) {
      probes->start(i);
      device::probe(r_.device, stream_);
      probes->stop(i);
      device::synchronize(r_.device);
    }
    pace.probe_us = r_.device.is_cuda() ? probes->elapsed_us() : std::vector<double>(kProbes, 0.0);
    return pace;
  }

  // Call i's time: this judge's clock less what the gate costs an empty call (CUDA), or the
  // candidate rank's own reading (the CPU device, where it is the only clock).
  double call_us(const std::vector<double>& judged, const std::vector<double>& reported, int i) const {
    if (r_.device.is_cuda()) return std::max(0.0, judged.at(i) - report_.gate->taken_us);
    return i < static_cast<int>(reported.size()) ? reported[i] : 0.0;
  }

  static std::vector<double> host_numbers(const eval::HostShare& h) {
    return {h.wall_ms, h.main_run_ms, h.main_wait_ms, h.pkb_run_ms, h.new_threads_run_ms};
  }
  static eval::HostShare host_share(const std::vector<double>& v, size_t at) {
    return {v.at(at), v.at(at + 1), v.at(at + 2), v.at(at + 3), v.at(at + 4)};
  }
  // Every judge's times of the same calls, the slowest rank per call.
  std::vector<double> slowest(const std::vector<double>& mine) {
    std::vector<std::vector<double>> all;
    for (auto& blob : r_.client.all_gather(r_.rank, r_.world, json(mine).dump()))
      all.push_back(json::parse(blob).get<std::vector<double>>());
    return eval::slowest_per_call(all);
  }

  // The reference alone in the candidate rank, before the candidate is loaded: its warm-up
  // on the warm-up's inputs, then job.baseline_iters calls (fewer where they are long),
  // each on inputs of its own. Every judge agrees on the slowest rank's calls.
  Decision baseline() {
    r_.client.phase(phase::kTimingSetup);
    fill(timing::kBaselineKey - 1);
    pair_.send(proto::kInputs, {{"warm", true}});
    r_.client.phase(phase::kAwaitCandidate);
    std::optional<Failure> fail;
    json timed;
    std::vector<double> reported;
    int n = 0, warm = 0;
    try {
      json t = pair_.receive(proto::kTiming);
      n = t.at("iters").get<int>();
      warm = t.value("warmup", 0);
      if (n < 1 || n > std::max(job_.baseline_iters, 1))
        throw proto::ProtocolError("asked for " + std::to_string(n) + " calls of the reference");
      auto timer = device::make_timer(r_.device, stream_, n);
      // The judges' own reference beside it, a block after every `blk` calls: the machine's pace then.
      const int blk = std::clamp(n / 5, 1, std::max(job_.block, 1));
      std::vector<double> paces, probes;
      timed = serve(phase::kReferenceTiming, timing::kBaselineKey, n, *timer, [&](int i, const json&) {
        if (plan_.judge_paces && i > 0 && (i % blk == 0 || i == n)) {
          JudgePace b = judge_reference(blk);
          paces.insert(paces.end(), b.reference_us.begin(), b.reference_us.end());
          probes.insert(probes.end(), b.probe_us.begin(), b.probe_us.end());
        }
        return Next{};
      });
      // The rank's threads now: pkb's own. A candidate is loaded only after the first
      // problem's baseline, and with several problems there is none (@reference).
      if (sh_.candidate > 0)
        for (auto& [tid, x] : launch::thread_times(sh_.candidate)) sh_.pkb_threads.insert(tid);
      if (timed.value("calls", -1) != n && reported_failure(timed) == std::nullopt)
        throw proto::ProtocolError(std::to_string(timed.value("calls", -1)) + " of " + std::to_string(n) + " calls");
      if (timed.value("us", json()).is_array()) reported = timed["us"].get<std::vector<double>>();
      fail = reported_failure(timed);
      std::vector<double> judged = timer->elapsed_us(), mine;
      for (int i = 0; i < n; ++i) mine.push_back(call_us(judged, reported, i));
      baseline_ = eval::CallTimes{slowest(mine), warm};
      judge_baseline_ = slowest(paces);
      probe_baseline_ = slowest(probes);
    } catch (const std::exception& e) {
      fail = protocol_failure("baseline", -1, e.what());
    }
    Decision d = agree(fail, false);
    tell(d);
    return d;
  }

  // The timed rounds: the candidate's warm-up (and the reference's again) in the candidate
  // rank, the plan agreed from both paces, then each call's side as the plan says, the
  // judges agreeing at every round's end on its times and on whether to go on; the
  // candidate's calls chosen in secret captured as they end. Then its captures judged.
  Decision timing() {
    r_.client.phase(phase::kTimingSetup);
    fill(timing::kWarmKey);
    pair_.send(proto::kInputs, {{"warm", true}});
    r_.client.phase(phase::kAwaitCandidate);
    std::optional<Failure> fail;
    json timed;
    std::vector<int> mine;  // the candidate's calls, by call number
    std::vector<int> captured;
    std::set<int> after_rounds;  // the candidate's calls after the rounds (below), by call number
    last_call_ = {};
    eval::Timing t;
    t.baseline = baseline_;
    t.judge_baseline_us = judge_baseline_;
    t.probe_baseline_us = probe_baseline_;
    try {
      json pace = pair_.receive(proto::kTiming);
      t.candidate_warmup = pace.at("warmup").at("candidate");
      t.reference_warmup = pace.at("warmup").at("reference");
      // Every judge plans from the same numbers: the slowest rank's paces.
      json gathered = json::array();
      for (auto& blob : r_.client.all_gather(r_.rank, r_.world, pace.dump())) gathered.push_back(json::parse(blob));
      double ref_s = 0, cand_s = 0;
      for (auto& g : gathered) {
        ref_s = std::max(ref_s, g.at("reference_s").get<double>());
        cand_s = std::max(cand_s, g.at("candidate_s").get<double>());
      }
      const eval::interleave::Settings settings = interleave_settings();
      t.plan = eval::interleave::plan(settings, ref_s, cand_s);
      // The rounds' calls, and the candidate's calls after them (below).
      const int most = t.plan.max_calls() + kCallsAfterRounds;
      pair_.send(proto::kPlan, {{"calls", most}});
      // A slot for the calls after the rounds too, where the memory plan holds two or more:
      // their outputs must be seen as their work on the stream ended, or late work has
      // landed by the time they are judged.
      const bool extra_slot = plan_.captures >= 2;
      captured = choose_captured(t.plan.max_rounds * t.plan.block, plan_.captures - (extra_slot ? 1 : 0));
      captures_ = std::make_unique<Captures>(harness_->out, static_cast<int>(captured.size()) + (extra_slot ? 1 : 0),
                                             r_.device);
      const std::vector<at::Tensor>* extra_capture = extra_slot ? &(*captures_)[static_cast<int>(captured.size())] : nullptr;
      std::map<int, int> slot_of;  // the candidate's k-th call -> capture
      for (size_t k = 0; k < captured.size(); ++k) slot_of[captured[k]] = static_cast<int>(k);
      auto timer = device::make_timer(r_.device, stream_, most);
      device::Clocks before = device::read_clocks(r_.device);
      std::vector<double> reported;  // the candidate rank's own reading of each call (CPU device)
      auto t0 = Clock::now();
      eval::interleave::Stop stop = eval::interleave::Stop::go_on;
      r_.client.phase(phase::kAwaitCandidate);
      if (sh_.candidate > 0) watch_ = std::make_unique<HostWatch>(sh_.candidate, sh_.pkb_threads);
      // One more call of the candidate's, in no round and timed for nothing, whose outputs
      // are judged as it ends.
      auto call_after = [&](int i) {
        after_rounds.insert(i);
        mine.push_back(i);
        Next n;
        n.side = eval::interleave::Side::candidate;
        n.capture = extra_capture;
        return n;
      };
      // Whether to stop after a call judged live: when a judge found it wrong, or after
      // kCallsAfterRounds. Every judge decides alike, since every candidate rank must make
      // the same calls.
      auto done_after = [&]() {
        bool failed = false;
        for (auto& blob : r_.client.all_gather(r_.rank, r_.world, last_call_.failure ? "1" : "0")) failed |= blob == "1";
        return failed || !extra_slot || static_cast<int>(after_rounds.size()) >= kCallsAfterRounds;
      };
      timed = serve(phase::kTimedCall, timing::kTimedKey, most, *timer, [&](int i, const json& m) {
        if (!after_rounds.empty()) {  // a call after the rounds is over: its outputs, its sizes in this request
          last_call_ = judge_last_call(i - 1, m, extra_capture);
          return done_after() ? Next{true} : call_after(i);
        }
        if (i > 0) reported.push_back(m.value("us", json(0.0)).is_number() ? m["us"].get<double>() : 0.0);
        if (i == 0 && watch_) watch_->restart();
        // A block ended where the side changes (and at every round's end): its threads then.
        if (i > 0 && watch_ && (eval::interleave::ends_round(t.plan, i - 1) ||
                                eval::interleave::side_of(t.plan, i) != eval::interleave::side_of(t.plan, i - 1)))
          watch_->ended(eval::interleave::side_of(t.plan, i - 1));
        if (i > 0 && eval::interleave::ends_round(t.plan, i - 1)) {
          close_round(t, i, *timer, reported, Clock::now() - t0);
          stop = eval::interleave::decide(t.plan, settings, t.rounds, t.seconds);
          if (stop != eval::interleave::Stop::go_on) {
            // The rounds end on the candidate's call: its outputs are judged now, while
            // still its own (the rank's escape check calls again once told to stop).
            if (!mine.empty() && mine.back() == i - 1) {
              auto it = slot_of.find(static_cast<int>(mine.size()) - 1);
              last_call_ = judge_last_call(i - 1, m, it == slot_of.end() ? nullptr : &(*captures_)[it->second]);
              if (done_after()) return Next{true};
            }
            // They ended on the reference's call, which wrote over the candidate's outputs, or
            // the last call looked right: late work that lands sooner or later than a call's
            // end by chance (a backlog a host thread works through, a race with a side stream)
            // shows in a call judged as it ends, so a few more calls are, while all look right.
            return call_after(i);
          }
        }
        Next n;
        n.side = eval::interleave::side_of(t.plan, i);
        if (n.side == eval::interleave::Side::candidate) {
          auto it = slot_of.find(static_cast<int>(mine.size()));
          if (it != slot_of.end()) n.capture = &(*captures_)[it->second];
          mine.push_back(i);
        }
        return n;
      });
      t.stop = eval::interleave::stop_name(stop);
      {  // the most any judge's candidate rank showed (every judge takes part: zeros where it watched none)
        HostWatch none(0, sh_.pkb_threads);
        HostWatch& w = watch_ ? *watch_ : none;
        std::vector<double> mine = host_numbers(w.reference), theirs = host_numbers(w.candidate);
        mine.insert(mine.end(), theirs.begin(), theirs.end());
        std::vector<double> all = slowest(mine);  // the most of each
        t.host_reference = host_share(all, 0);
        t.host_candidate = host_share(all, 5);
      }
      device::Clocks after = device::read_clocks(r_.device);
      report_.clocks = eval::Clocks{before.sm_mhz, after.sm_mhz, after.max_sm_mhz, after.throttle_reasons,
                                    before.throttled || after.throttled};
      report_.timing = t;
      if (r_.device.is_cuda()) {  // this judge's clock over its own candidate rank's calls
        std::vector<double> judged = timer->elapsed_us();
        eval::CallTimes c;
        for (int i : mine)
          if (!after_rounds.count(i)) c.us.push_back(call_us(judged, reported, i));
        report_.candidate = c;
      }
      fail = reported_failure(timed);
    } catch (const std::exception& e) {
      fail = protocol_failure("timing", -1, e.what());
    }
    r_.client.phase(phase::kTimingChecks);
    int made = std::min<int>(static_cast<int>(mine.size() - after_rounds.size()),
                             static_cast<int>(timed.value("sizes", json::array()).size()));
    report_.captured_calls = static_cast<int>(std::count_if(captured.begin(), captured.end(), [&](int k) { return k < made; }));
    if (!fail) fail = check_timed(timed, mine, captured, after_rounds);
    return agree(fail, false);
  }

  eval::interleave::Settings interleave_settings() const {
    eval::interleave::Settings s;
    s.block = job_.block;
    s.calls = job_.iters;
    s.min_calls = job_.min_iters;
    // The CPU device's timings count for nothing: no rounds past `calls` for their interval.
    s.max_calls = r_.device.is_cuda() ? job_.max_iters : job_.iters;
    s.target = job_.interval_target;
    s.budget_s = 2 * job_.timing_budget_s;
    s.gate_us = r_.device.is_cuda() && report_.gate ? report_.gate->iqr_us : 0.0;  // as the verdict widens it
    return s;
  }

  // The round that call `next` follows: each side's calls in it, at the slowest rank.
  void close_round(eval::Timing& t, int next, device::CallTimer& timer, const std::vector<double>& reported,
                   Clock::duration elapsed) {
    const int first = next - 2 * t.plan.block;
    std::vector<double> judged = r_.device.is_cuda() ? timer.elapsed_us() : std::vector<double>{}, mine;
    for (int i = first; i < next; ++i) mine.push_back(call_us(judged, reported, i));
    JudgePace pace = plan_.judge_paces ? judge_reference(t.plan.block) : JudgePace{};
    if (watch_) watch_->restart();  // the rank was held meanwhile
    mine.insert(mine.end(), pace.reference_us.begin(), pace.reference_us.end());
    mine.insert(mine.end(), pace.probe_us.begin(), pace.probe_us.end());
    mine.push_back(std::chrono::duration<double>(elapsed).count());  // the rounds' time so far, this judge's
    std::vector<double> all = slowest(mine);
    t.seconds = all.back();  // every judge decides on the slowest judge's time too
    all.pop_back();
    eval::interleave::Round round;
    for (int i = first; i < next; ++i)
      (eval::interleave::side_of(t.plan, i) == eval::interleave::Side::reference ? round.reference_us : round.candidate_us)
          .push_back(all[i - first]);
    auto paced = all.begin() + (next - first);
    round.judge_us.assign(paced, paced + static_cast<long>(pace.reference_us.size()));
    round.probe_us.assign(paced + static_cast<long>(pace.reference_us.size()), all.end());
    t.rounds.push_back(round);
  }

  // The candidate's last timed call, as the rounds end and before the rank is told so: its
  // capture (or, where it has none, its outputs as they are now) against the reference on
  // its inputs made again; when wrong, its live outputs get a while to become right (late
  // work). Its reported sizes come with the request that follows it.
  struct LastCall {
    int call = -1;
    std::optional<Failure> failure;
  };
  LastCall judge_last_call(int i, const json& request, const std::vector<at::Tensor>* capture) {
    return {i, judge_timed_call(i, capture ? *capture : harness_->out, request.value("sizes", json()), true)};
  }

  // Timed call i's outputs `got` (at the reported `sizes`) against the reference on its
  // inputs made again. The reference runs first, on every judge in step, whatever the sizes.
  std::optional<Failure> judge_timed_call(int i, const std::vector<at::Tensor>& got, const json& sizes, bool live) {
    Inputs pristine = pc_.inputs_for(timing::kTimedKey + i);
    std::vector<at::Tensor> want = pc_.run_reference(pristine).outputs;
    if (!sizes.is_array() || sizes.empty())
      return protocol_failure("timing", -1, "no output sizes for timed call " + std::to_string(i));
    std::optional<Failure> f = judge_call(got, sizes_of(sizes), live, want, "timing", timing::kTimedKey + i);
    if (f) f->detail = "timed call " + std::to_string(i) + ": " + f->detail;
    return f;
  }

  // The candidate's timed calls whose outputs are captured: all when the `slots` hold them
  // (`n`: the most the rounds can make), else a secret sample drawn from the run's seed, the
  // same on every judge. Numbered by the candidate's calls (0 is its first timed call).
  std::vector<int> choose_captured(int n, int slots) {
    std::vector<int> calls(n);
    std::iota(calls.begin(), calls.end(), 0);
    if (slots < n) {
      std::mt19937_64 pick(tensor::derive_seed(job_.seed, timing::kTimedKey, 7));
      std::shuffle(calls.begin(), calls.end(), pick);
      calls.resize(std::max(slots, 1));
      std::sort(calls.begin(), calls.end());
    }
    return calls;
  }

  // The last candidate call's read-only inputs, then every captured call against the
  // reference on its own inputs made again: replayed, cached, skipped or late work shows
  // here. The calls after the rounds were judged as each ended (last_call_ holds the last
  // of them), with their live outputs. Late work is named wherever a call shows it; else
  // the first wrong call.
  std::optional<Failure> check_timed(const json& timed, const std::vector<int>& mine, const std::vector<int>& captured,
                                     const std::set<int>& after_rounds) {
    int calls = timed.value("calls", -1);
    json sizes = timed.value("sizes", json::array());
    if (static_cast<int>(sizes.size()) != static_cast<int>(mine.size()))
      return protocol_failure("timing", -1, "sizes of " + std::to_string(sizes.size()) + " of " +
                                                std::to_string(mine.size()) + " calls");
    if (!mine.empty() && calls != mine.back() + 1 && calls != mine.back() + 2)
      return protocol_failure("timing", -1, std::to_string(calls) + " calls made");
    bool last_is_live = !mine.empty() && calls == mine.back() + 1;
    if (!mine.empty() && last_is_live && !last_inputs_.tensors().empty())
      if (auto f = check_inputs(last_inputs_, "timing", timing::kTimedKey + mine.back())) return f;
    std::optional<Failure> first;
    for (size_t k = 0; k < captured.size(); ++k) {
      int c = captured[k];
      if (c >= static_cast<int>(mine.size())) break;
      int i = mine[c];
      if (i == last_call_.call || after_rounds.count(i)) continue;  // judged as the rounds ended
      std::optional<Failure> f = judge_timed_call(i, (*captures_)[static_cast<int>(k)], sizes[c], false);
      ++report_.timed_calls_checked;
      if (!f) continue;
      if (f->reason == "late_work") return f;
      if (!first) first = f;
    }
    if (last_call_.call >= 0) {
      ++report_.timed_calls_checked;
      if (last_call_.failure && (last_call_.failure->reason == "late_work" || !first)) return last_call_.failure;
    }
    return first;
  }

  rank::Rank& r_;
  const rank::Job& job_;
  const rank::Job::EvalProblem& plan_;
  ProblemContext pc_;
  JudgeShared& sh_;
  Pair& pair_;
  void* stream_;
  JudgeGate* gate_ = nullptr;
  eval::JudgeReport report_;
  eval::HarnessLayout layout_;
  std::unique_ptr<Harness> harness_;
  std::unique_ptr<Captures> trial_capture_, captures_;
  Inputs last_inputs_;         // the last candidate call's, as written
  LastCall last_call_;         // the candidate's last timed call, judged as the rounds ended
  Inputs last_fill_;           // the last timed call's, either side's: the judge's own reference calls run on them
  eval::CallTimes baseline_;   // the reference alone, agreed by the judges
  std::vector<double> judge_baseline_;  // the judges' own reference beside it, agreed
  std::vector<double> probe_baseline_;  // the judges' device probe beside it, agreed
  std::unique_ptr<HostWatch> watch_;    // the candidate rank's threads through the rounds
};

// A judge rank: the candidate rank's memory mapped once, then each problem judged in turn.
class JudgeRank {
 public:
  explicit JudgeRank(rank::Rank& r) : r_(r), job_(r.job) {}

  json run() {
    sh_.stream = device::make_stream(r_.device);
    r_.make_heap(0);  // its signal pads align the judges' timed calls
    const size_t n = job_.specs.size();
    const bool several = n > 1;
    map_candidate();
    json reports = json::array();
    for (size_t k = 0; k < n; ++k) {
      if (several) r_.client.set_problem(std::filesystem::path(job_.specs[k]).stem().string());
      reports.push_back(JudgeProblem(r_, k, sh_).run());
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
    sh_.candidate = static_cast<pid_t>(ready.value("pid", int64_t{0}));
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
  JudgeShared sh_;
};

}  // namespace

json run_judge(rank::Rank& r) { return JudgeRank(r).run(); }

}  // namespace pkb::jobs
