// pkb eval on a candidate rank: the candidate, confined, on inputs its judge rank puts into
// its set before every call, and the timing of its calls beside the reference's.
//
// The rank lays out its harness (eval/layout.hpp) in the symmetric heap and a shared host
// region, which its judge maps; lets its judge calibrate the gate on pkb's own empty calls;
// makes its own communicator (NCCL, where ranks have a GPU each) connect; sets up the
// problem's reference over it; enters the sandbox (rank/sandbox.hpp); has the reference
// timed alone there (the baseline), and only then loads the candidate. Every call, the
// candidate's and the reference's alike, runs between the gate's flags (jobs/gate.hpp): the
// judge poisons the outputs and writes the inputs before it, and times it and copies the
// candidate's outputs out from its own process as the call's work on ctx->stream ends. The
// timed calls alternate between the two in blocks the judges choose (eval/interleave.hpp),
// so both sides are timed in this one process, by the same path and clock. This process
// never holds the run's seed, the reference's answers, the captures or the clock that
// counts: it cannot copy or rewrite what it never holds. It runs the reference's code, so
// it could slow the reference down beside it: the judges credit the reference at most a
// little over its baseline, timed before any candidate code existed here.
#include <ATen/ATen.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include <sched.h>

#include "comm/comms.hpp"
#include "device/device.hpp"
#include "eval/candidate.hpp"
#include "eval/compare.hpp"
#include "eval/layout.hpp"
#include "eval/protocol.hpp"
#include "eval/reference_candidate.hpp"
#include "eval/reports.hpp"
#include "heap/heap.hpp"
#include "io/clock.hpp"
#include "jobs/gate.hpp"
#include "jobs/harness.hpp"
#include "jobs/jobs.hpp"
#include "jobs/timing.hpp"
#include "launch/phases.hpp"
#include "rank/sandbox.hpp"
#include "tensor/dtypes.hpp"

namespace pkb::jobs {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using eval::CandidateCtx;
using eval::Failure;
using eval::Verdict;
using eval::protocol::Pair;
namespace proto = eval::protocol;
namespace phase = launch::phase;

using io::ms_since;

// The sandbox's verdict on what the candidate just did, as an error that ends the rank.
void deny_if_violated(int rank, const std::string& when) {
  std::string v = rank::take_violation();
  if (!v.empty())
    throw rank::RankError(rank::ErrorKind::sandbox, "rank " + std::to_string(rank) + ": " + when + ", the candidate tried " +
                                                        v + ", which pkb's sandbox denies (candidates may not use the "
                                                            "network, start processes or run programs)");
}

// What a candidate rank makes once and its problems share (several only for the reference
// as the candidate): its stream, the pair's messages, the harness regions sized for the
// largest problem (the gate's flags at their start), the communicator the reference runs on.
struct CandidateShared {
  void* stream = nullptr;
  std::unique_ptr<Pair> pair;
  char* base = nullptr;  // the harness region in the heap
  std::unique_ptr<heap::Mapping> host;
  std::unique_ptr<CandidateGate> gate;
  std::unique_ptr<Comm> own_comm;  // the reference's where the rank has no communicator
  std::unique_ptr<eval::Candidate> candidate;  // a native or .py candidate, loaded once
  std::vector<std::unique_ptr<eval::ReferenceCandidate>> references;  // one per problem: the baseline (and @reference)
  rank::SandboxStatus sandbox;
};

// One problem on a candidate rank: the calibration of its gate, the reference's baseline,
// then pkb_init, the trials and the timed rounds of the candidate beside the reference.
class CandidateProblem {
 public:
  CandidateProblem(rank::Rank& r, size_t k, CandidateShared& sh)
      : r_(r), job_(r.job), spec_(spec::load_spec(job_.specs.at(k))),
        dt_name_(job_.dtype.empty() ? spec_.dtype : job_.dtype), dt_(tensor::resolve(dt_name_, at::kFloat)),
        vars_(spec_.vars_for(job_.size, r.world, r.rank)), sh_(sh), pair_(*sh.pair), stream_(sh.stream),
        gate_(sh.gate.get()) {
    view_harness();
  }

  // The gate's own cost, measured by the judge on calls of pkb's that do nothing, here,
  // before any candidate code exists in this process (CUDA: the judge's clock needs it).
  // Everything a timed call has but the candidate's work: the rank's own events too.
  void calibrate() {
    if (!r_.device.is_cuda() || !job_.timing) return;
    r_.client.phase(phase::kCalibration);
    const int n = eval::protocol::kCalibrationCalls;
    auto own = device::make_timer(r_.device, stream_, n);
    for (int i = 0; i < n; ++i) {
      Request q = request_call(i);
      gate_->call(q.seq, [] { return 0; }, own.get(), i);
    }
    device::sync_stream(r_.device, stream_);
  }

  // The reference alone, timed through the gate as every later call is: its warm-up, then
  // calls on inputs the judge writes before each. Before the candidate is loaded (the
  // first problem's) or while none is (@reference's), so nothing of a candidate can touch
  // it: what the judges hold the reference's calls beside the candidate to. Returns false
  // when the judges end the problem here.
  bool baseline(eval::Candidate& reference) {
    if (!job_.timing) return true;
    r_.client.phase(phase::kReferenceWarmup);
    pair_.receive(proto::kInputs);  // the warm-up's inputs are in the set
    std::optional<Failure> fail;
    timing::Warmup w = timing::warm_up(r_, [&] {
      fail = call(reference, phase::kReferenceWarmup, timing::kWarmKey);
      return !fail;
    });
    // A quarter of a side's budget: it sets only the bound on the reference beside the
    // candidate. The CPU device's timings count for nothing: no more calls than --iters.
    int most = r_.device.is_cuda() ? job_.baseline_iters : std::min(job_.baseline_iters, job_.iters);
    int n = timing::agree_iters(r_, w.s_per_call, std::max(most, 1), job_.timing_budget_s / 4);
    pair_.send(proto::kTiming, {{"iters", n}, {"warmup", w.calls}});
    r_.client.phase(phase::kReferenceTiming);
    auto own = device::make_timer(r_.device, stream_, n);
    int i = 0;
    for (; !fail; ++i) {
      Request q = request_call(i, last_us(*own, i));  // the request after the last call is told to stop
      if (q.stop) break;
      if (i >= n) throw proto::ProtocolError("the judge asked for more than " + std::to_string(n) + " calls");
      fail = gate_->call(q.seq, [&] { return call(reference, phase::kReferenceTiming, timing::kBaselineKey + i); },
                         own.get(), i);
    }
    device::synchronize(r_.device);
    std::vector<double> us = own->elapsed_us();
    us.resize(i);
    pair_.send(proto::kTimed, {{"failure", failure_json(fail)}, {"calls", i}, {"us", r_.device.is_cuda() ? json() : json(us)}});
    device::release_cached_memory(r_.device);  // the judge runs its reference in the trials
    state_before_ = device::process_state(r_.device);  // before the candidate's calls: what the rounds must find
    r_.client.phase(phase::kAwaitJudge);
    return decided();
  }

  json run(eval::Candidate& candidate, eval::Candidate& reference) {
    cand_ = &candidate;
    ref_ = &reference;
    auto t0 = Clock::now();
    init();
    report_.phase_ms["init"] = ms_since(t0);
    t0 = Clock::now();
    bool go_on = trials();
    report_.phase_ms["trials"] = ms_since(t0);
    if (go_on && job_.timing) {
      t0 = Clock::now();
      timing();
      report_.phase_ms["timing"] = ms_since(t0);
    }
    return finish();
  }

  // The report of a problem that ended before the candidate ran (its baseline failed).
  json finish() {
    report_.sandbox = sh_.sandbox.to_json();
    r_.client.phase(phase::kFinish);
    if (cand_) cand_->finalize(cctx_->get());
    device::synchronize(r_.device);
    return eval::to_json(report_);
  }

 private:
  // ---- set-up ---------------------------------------------------------------------------

  // This problem's set over the shared regions, as the candidate sees it. A tensor empty on
  // this rank still has its slot (solution.h): its address, not the null data pointer of
  // an empty tensor.
  void view_harness() {
    layout_ = eval::plan_harness(spec_, job_.size, r_.world, dt_name_);
    char* host = static_cast<char*>(sh_.host->data());
    harness_ = std::make_unique<Harness>(spec_, vars_, dt_, layout_, sh_.base, host, r_.device);
    auto described = [&](const spec::TensorSpec& t, const at::Tensor& x, const eval::Slot& slot) {
      pkb_tensor d = eval::describe(t, x, !t.host);
      d.data = (slot.host ? host : sh_.base) + slot.offset;
      return d;
    };
    for (size_t i = 0; i < spec_.inputs.size(); ++i) din_.push_back(described(spec_.inputs[i], harness_->in[i], layout_.in[i]));
    for (size_t i = 0; i < spec_.outputs.size(); ++i)
      dout_.push_back(described(spec_.outputs[i], harness_->out[i], layout_.out[i]));
    cctx_ = std::make_unique<CandidateCtx>(*r_.heap, r_.client, r_.device.is_cuda() ? r_.device.index() : -1, stream_,
                                           comm::nccl_handle(r_.comm.get()), spec_, vars_);
  }

  void init() {
    r_.client.phase(phase::kInit);
    // pkb_init sees shapes and dtypes, no data.
    std::vector<pkb_tensor> din, dout;
    for (size_t i = 0; i < spec_.inputs.size(); ++i)
      din.push_back(eval::describe_shape(spec_.inputs[i], harness_->in[i].sizes().vec(), harness_->in[i].scalar_type()));
    for (size_t i = 0; i < spec_.outputs.size(); ++i)
      dout.push_back(eval::describe_shape(spec_.outputs[i], harness_->out[i].sizes().vec(), harness_->out[i].scalar_type()));
    int rc = cand_->init(cctx_->get(), din, dout);
    device::synchronize(r_.device);
    deny_if_violated(r_.rank, "in pkb_init");
    if (rc != 0) throw std::runtime_error(cand_->returned("pkb_init", rc) + explain());
    cctx_->end_init();
    // Symmetric means symmetric: every rank must have allocated the same buffers.
    auto layouts = r_.client.all_gather(r_.rank, r_.world, r_.heap->layout());
    for (int q = 0; q < r_.world; ++q)
      if (layouts[q] != layouts[0])
        throw std::runtime_error("ranks 0 and " + std::to_string(q) +
                                 " made different symm_alloc calls in pkb_init; every rank must allocate the same "
                                 "sizes in the same order");
  }

  // What the judge answers a request for a call: the call's number on the gate, which side
  // it is, or that the timed rounds are over.
  struct Request {
    uint32_t seq = 0;
    eval::interleave::Side side = eval::interleave::Side::candidate;
    bool stop = false;
  };

  // Asks the judge for call `i` (its inputs written, its outputs poisoned); `us`: the last
  // call's time by this rank's own clock, on the CPU device (where it is the only clock;
  // null on CUDA). On CUDA the thread never sleeps between asking and the call: it polls
  // the store's acknowledgement of the request and then the judge's answer while the judge
  // writes the inputs (for up to kAwaitInputsSpinS, then sleeps), so the call is enqueued
  // by a thread that did not just wake (a thread that slept even on the acknowledgement's
  // ~20 us enqueued the call after it slower). Not where a spin would take a core from a
  // judge: on the CPU device or, unpinned, with fewer CPUs than every rank and the parent
  // need (an allocation of few cores beside several GPUs). A pinned rank's CPU is its own
  // (launch/cpus.hpp).
  static constexpr double kAwaitInputsSpinS = 0.05;
  bool spin_for_inputs() const {
    cpu_set_t cpus;
    return r_.device.is_cuda() && (job_.timing_cpu >= 0 || (sched_getaffinity(0, sizeof cpus, &cpus) == 0 &&
                                                            CPU_COUNT(&cpus) >= 2 * r_.world + 1));
  }
  // `us`: call i-1's time by this rank's clock (the CPU device); `sizes`: its outputs'
  // reported sizes where it was the candidate's (the judges look at its outputs at the end).
  Request request_call(int i, json us = nullptr, json sizes = nullptr) {
    struct Spin {
      launch::Client& c;
      ~Spin() { c.spin_while_waiting(0); }
    } spin{r_.client};
    if (spin_) r_.client.spin_while_waiting(kAwaitInputsSpinS);
    pair_.send(proto::kFill, {{"call", i}, {"us", us}, {"sizes", sizes}});
    json f = pair_.receive(proto::kFilled);
    if (f.value("call", -1) != i) throw proto::ProtocolError("filled the wrong call");
    Request q;
    q.stop = f.value("stop", false);
    if (q.stop) return q;
    q.seq = f.at("seq").get<uint32_t>();
    q.side = f.value("side", "candidate") == std::string("reference") ? eval::interleave::Side::reference
                                                                       : eval::interleave::Side::candidate;
    return q;
  }

  // Call i-1's time by this rank's own clock, for the judge, on the CPU device; null on CUDA.
  json last_us(device::CallTimer& own, int i) const {
    if (r_.device.is_cuda() || i == 0) return nullptr;
    return own.elapsed_us().at(static_cast<size_t>(i - 1));
  }

  std::optional<Failure> sandbox_failure(const std::string& ph, int64_t trial) {
    std::string v = rank::take_violation();
    if (v.empty()) return std::nullopt;
    return failure(Verdict::integrity_violation, ph, trial, "sandbox", "the candidate tried " + v + ", which pkb's sandbox denies");
  }

  Failure failure(Verdict v, const std::string& ph, int64_t trial, const std::string& reason, const std::string& detail) {
    Failure f = Failure::of(v, ph, reason, detail);
    f.trial = trial;
    f.rank = r_.rank;
    return f;
  }

  std::string explain() {
    std::string e = cctx_->take_error();
    return e.empty() ? "" : ": " + e;
  }

  // ---- calls ----------------------------------------------------------------------------------

  // Dynamic dims start at their capacity; the candidate writes the real size.
  void reset_sizes() {
    for (size_t i = 0; i < harness_->out.size(); ++i)
      for (int d = 0; d < dout_[i].ndim; ++d) dout_[i].sizes[d] = harness_->out[i].size(d);
  }

  // Every call starts with its data-dependent dims at their capacity (solution.h), whatever
  // the last one reported. The reference's calls fail as pkb's own, which the verdict says.
  std::optional<Failure> call(eval::Candidate& who, const std::string& ph, int64_t trial) {
    reset_sizes();
    int rc = who.run(cctx_->get(), din_, dout_);
    if (rc == 0) return std::nullopt;
    if (&who != cand_)
      return failure(Verdict::crash, ph, trial, "reference",
                     "the reference, timed in the candidate rank, failed (" + who.returned("pkb_run", rc) + explain() +
                         ")" + (cand_ ? ": the candidate left its process unfit for it" : ""));
    return failure(Verdict::wrong, ph, trial, "error", who.returned("pkb_run", rc) + explain());
  }
  std::optional<Failure> call(const std::string& ph, int64_t trial) { return call(*cand_, ph, trial); }

  // The sizes the call reported, one list per output.
  ReportedSizes reported_sizes() const {
    ReportedSizes sizes;
    for (auto& d : dout_) sizes.emplace_back(d.sizes, d.sizes + d.ndim);
    return sizes;
  }

  static json failure_json(const std::optional<Failure>& f) { return f ? f->to_json() : json(); }

  // The judge's decision after a step: false when the evaluation is over for this rank.
  bool decided(bool* stop = nullptr) {
    json d = pair_.receive(proto::kDecision);
    if (stop) *stop = d.value("stop", false);
    return d["failure"].is_null();
  }

  // ---- trials -----------------------------------------------------------------------------

  // Returns whether the evaluation goes on to timing.
  bool trials() {
    for (int t = 0;; ++t) {
      r_.client.phase(phase::kAwaitJudge, t);
      json in = pair_.receive(proto::kInputs);
      if (in.value("trial", -1) != t) throw proto::ProtocolError("inputs for " + in.dump() + " in trial " + std::to_string(t));
      r_.client.phase(phase::kTrial, t);
      std::optional<Failure> fail = gate_->call(in.at("seq").get<uint32_t>(), [&] { return call(phase::kTrial, t); });
      // Device errors (and work the candidate left on other streams) surface here.
      device::synchronize(r_.device);
      if (!fail) fail = sandbox_failure(phase::kTrial, t);
      pair_.send(proto::kRan, {{"trial", t}, {"failure", failure_json(fail)}, {"sizes", reported_sizes()}});
      r_.client.phase(phase::kAwaitJudge, t);
      bool stop = false;
      if (!decided(&stop)) return false;
      if (stop) return true;
    }
  }

  // ---- timing -------------------------------------------------------------------------------

  // Warm-ups here, on the set as the judge left it; then the timed rounds: each call, the candidate's or the reference's as the judge says, on inputs the
  // judge writes just before it, between the gate's flags; then the escape check. The
  // judge's clock is the one that counts; the rank's own events are its reading of the
  // candidate's calls, sent along.
  void timing() {
    r_.client.phase(phase::kTimingSetup);
    pair_.receive(proto::kInputs);  // the warm-up's inputs are in the set
    r_.client.phase(phase::kCandidateWarmup);
    std::optional<Failure> fail;
    timing::Warmup wc = timing::warm_up(r_, [&] {
      fail = call(phase::kCandidateWarmup, timing::kWarmKey);
      return !fail;
    });
    int n = timing::agree_iters(r_, wc.s_per_call);  // the escape check's batches
    // The reference was warm at its baseline; the candidate's calls came since.
    timing::Warmup wr = timing::warm_up(
        r_,
        [&] {
          if (!fail) fail = call(*ref_, phase::kCandidateWarmup, timing::kWarmKey);
          return !fail;
        },
        std::max(job_.warmup / 5, 1), job_.warmup_budget_s / 4);
    pair_.send(proto::kTiming, {{"candidate_s", wc.s_per_call}, {"reference_s", wr.s_per_call},
                                {"warmup", {{"candidate", wc.calls}, {"reference", wr.calls}}}, {"failed", bool(fail)}});
    const int most = pair_.receive(proto::kPlan).at("calls").get<int>();

    r_.client.phase(phase::kCandidateTiming);
    auto own = device::make_timer(r_.device, stream_, std::max(most, 1));
    std::vector<int> mine;  // the candidate's calls among them
    std::vector<ReportedSizes> sizes;
    std::vector<double> copy_us;
    int i = 0;
    json last_sizes;  // the last call's, where it was the candidate's
    for (; !fail; ++i) {
      Request q = request_call(i, last_us(*own, i), last_sizes);  // the judges end the rounds where they choose
      if (q.stop) break;
      if (i >= most) throw proto::ProtocolError("the judge asked for more than " + std::to_string(most) + " calls");
      bool candidate = q.side == eval::interleave::Side::candidate;
      fail = gate_->call(q.seq, [&] { return call(candidate ? *cand_ : *ref_, phase::kCandidateTiming, timing::kTimedKey + i); },
                         own.get(), i);
      last_sizes = nullptr;
      if (!candidate) continue;
      mine.push_back(i);
      sizes.push_back(reported_sizes());
      last_sizes = sizes.back();
      copy_us.push_back(cand_->adapter_us());
    }
    device::synchronize(r_.device);
    std::vector<double> all = own->elapsed_us();
    all.resize(i);
    // After the rounds (the judges looked at the last call's outputs before saying stop): its
    // graph capture left the process slower to enqueue for the rest of its life (launch-bound
    // references 1.5-2x on the H100), which must not fall between the baseline and the rounds.
    if (!fail) escape_check(n);
    if (!fail) fail = sandbox_failure(phase::kCandidateTiming, -1);
    // What the reference ran under that the candidate's calls changed (the judges weigh it).
    if (!state_before_.empty()) report_.state_changed = device::state_changes(state_before_, device::process_state(r_.device));
    eval::CallTimes t;
    for (int k : mine) t.us.push_back(all[k]);
    t.warmup = wc.calls;
    report_.timing = t;
    if (std::any_of(copy_us.begin(), copy_us.end(), [](double x) { return x > 0; })) report_.copy_us = copy_us;
    device::release_cached_memory(r_.device);  // the judge runs its reference on the captured calls
    pair_.send(proto::kTimed, {{"failure", failure_json(fail)}, {"sizes", sizes}, {"calls", i},
                               {"us", r_.device.is_cuda() ? json() : json(all)}});
    r_.client.phase(phase::kAwaitJudge);
    decided();
  }

  // Work the candidate leaves off the timed stream: device-synchronised host time of a
  // batch of calls against the timed stream's event time for the batch. Work escaping to
  // other streams or threads piles up outside the events, call after call; the same batch
  // with no calls gives pkb's own overhead. Batches of up to 20 calls, fewer where few
  // calls are timed (long calls).
  void escape_check(int n) {
    if (!r_.device.is_cuda()) return;
    r_.client.phase(phase::kEscapeCheck);
    const int batch = std::clamp(n / 5, 2, 20), repeats = 3;
    auto one = [&](bool calls, std::vector<double>& host, std::vector<double>& event) {
      device::synchronize(r_.device);
      auto timer = device::make_timer(r_.device, stream_, 1);
      auto t0 = Clock::now();
      timer->start(0);
      for (int i = 0; i < batch && calls; ++i) call(phase::kEscapeCheck, timing::kWarmKey);
      timer->stop(0);
      device::synchronize(r_.device);
      host.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      event.push_back(timer->elapsed_us()[0]);
    };
    eval::EscapeCheck e;
    e.calls = batch;
    std::vector<double> base_event;
    for (int k = 0; k < repeats; ++k) {
      one(false, e.baseline_host_us, base_event);
      one(true, e.host_us, e.event_us);
    }
    // One call captured into a graph: work forked off the stream and never joined fails it.
    device::synchronize(r_.device);
    device::Joined joined =
        device::capture_joined(r_.device, stream_, [&] { call(phase::kEscapeCheck, timing::kWarmKey); });
    device::synchronize(r_.device);
    e.capture = joined == device::Joined::yes ? "joined" : joined == device::Joined::no ? "unjoined" : "unknown";
    report_.escape = e;
  }

  rank::Rank& r_;
  const rank::Job& job_;
  spec::ProblemSpec spec_;
  std::string dt_name_;
  at::ScalarType dt_;
  spec::Vars vars_;
  CandidateShared& sh_;
  Pair& pair_;
  void* stream_;
  CandidateGate* gate_;
  const bool spin_ = spin_for_inputs();  // after r_ (members are made in this order)
  eval::Candidate* cand_ = nullptr;
  eval::Candidate* ref_ = nullptr;
  eval::CandidateReport report_;
  std::map<std::string, std::string> state_before_;  // device::process_state as the baseline ended
  eval::HarnessLayout layout_;
  std::unique_ptr<Harness> harness_;
  std::vector<pkb_tensor> din_, dout_;
  std::unique_ptr<CandidateCtx> cctx_;
};

// A candidate rank: the harness regions for its largest problem, exported before any
// candidate code exists; the gate calibrated; its communicator connected; the references
// set up; the sandbox; the baseline; the candidate loaded; then each problem in turn.
class CandidateRank {
 public:
  explicit CandidateRank(rank::Rank& r) : r_(r), job_(r.job) {}

  json run() {
    // From here on, on the CPU of its own that the timed calls run on (launch/cpus.hpp): the
    // gate's calibration, both sides' calls and any thread the candidate starts. For good:
    // the sandbox denies moving later.
    r_.to_timing_cpu();
    sh_.stream = device::make_stream(r_.device);
    sh_.pair = std::make_unique<Pair>(r_.client, Pair::Side::candidate, r_.rank);
    make_regions();
    const size_t n = job_.specs.size();
    const bool several = n > 1, reference = rank::is_reference_solution(job_.library);
    if (several) r_.client.set_problem(slug(0));
    auto first = std::make_unique<CandidateProblem>(r_, 0, sh_);
    first->calibrate();  // before anything of the candidate is loaded
    r_.client.phase(phase::kInit);
    connect();
    // Each problem's reference, pkb's own code: the baseline timed beside the candidate, and
    // with @reference the candidate too. Set up before the sandbox (a sub-communicator opens
    // sockets), over the candidate's NCCL where ranks have a GPU each, else over shared
    // memory of its own (no sockets after the sandbox either).
    if (reference || job_.timing) {
      if (!r_.comm) sh_.own_comm = comm::make_shm(r_.client, r_.rank, r_.world, r_.device);
      Comm* comm = r_.comm ? r_.comm.get() : sh_.own_comm.get();
      for (size_t k = 0; k < n; ++k) {
        spec::ProblemSpec s = spec::load_spec(job_.specs[k]);
        at::ScalarType dt = tensor::resolve(job_.dtype.empty() ? s.dtype : job_.dtype, at::kFloat);
        sh_.references.push_back(eval::make_reference_candidate(s, job_.size, r_.world, r_.rank, r_.device, dt, *comm));
      }
    }
    // A .py candidate's interpreter (torch, Triton) starts before the sandbox, as pkb's own
    // work, under a deadline of its own.
    bool python = std::filesystem::path(job_.library).extension() == ".py";
    if (python) r_.client.phase(phase::kInterpreter);
    eval::LoadNeeds needs = reference ? eval::LoadNeeds{} : eval::prepare_candidate(job_.library, r_);
    if (python) r_.client.phase(phase::kInit);
    if (job_.sandbox) {
      if (!reference) needs.read.push_back(std::filesystem::path(job_.library).parent_path().string());
      needs.read.push_back(std::filesystem::path(job_.spec()).parent_path().string());
      rank::SandboxPaths paths = rank::rank_paths(needs.read, needs.write);
      if (needs.processes) rank::allow_programs(paths, needs.exec);
      sh_.sandbox = rank::enter_sandbox(paths);
    }

    json reports = json::array();
    for (size_t k = 0; k < n; ++k) {
      std::unique_ptr<CandidateProblem> problem = std::move(first);
      if (k > 0) {
        r_.client.set_problem(slug(k));
        problem = std::make_unique<CandidateProblem>(r_, k, sh_);
        problem->calibrate();
      }
      eval::ReferenceCandidate* ref = sh_.references.empty() ? nullptr : sh_.references[k].get();
      // The baseline, in the sandbox and before the candidate is loaded: nothing of it here yet.
      bool go_on = !ref || problem->baseline(*ref);
      if (go_on && !reference && !sh_.candidate) {
        sh_.candidate = eval::load_candidate(job_.library);  // its constructors (a module's import) run here, confined
        deny_if_violated(r_.rank, "while being loaded");
        // A candidate that hands back tensors of its own is charged their copy into pkb's
        // buffers; its baseline pays the same.
        if (sh_.candidate->copies_outputs())
          for (auto& x : sh_.references) x->set_form(eval::ReferenceForm::copied);
      }
      if (go_on) {
        eval::Candidate& candidate = reference ? *ref : *sh_.candidate;
        reports.push_back(problem->run(candidate, ref ? *ref : candidate));
      } else {
        reports.push_back(problem->finish());
      }
      if (several) r_.client.part(reports.back().dump());  // kept, whatever a later problem does
      // Kept: the candidate's threads may still point into a problem's buffers, and the
      // rank exits right after the result, with no teardown.
      problem.release();
    }
    return several ? json{{"problems", reports}} : reports[0];
  }

 private:
  std::string slug(size_t k) const { return std::filesystem::path(job_.specs.at(k)).stem().string(); }

  // The harness first in the symmetric heap (inputs and outputs symmetric, as candidates
  // expect), then the candidate's own heap; host tensors in a shared host region. Both
  // sized for the largest problem, exported before any candidate code exists; the judge
  // maps them.
  void make_regions() {
    size_t device = 0, host = 0, own = 0;
    for (size_t k = 0; k < job_.specs.size(); ++k) {
      spec::ProblemSpec s = spec::load_spec(job_.specs[k]);
      eval::HarnessLayout l = eval::plan_harness(s, job_.size, r_.world, job_.dtype.empty() ? s.dtype : job_.dtype);
      device = std::max(device, l.device_bytes());
      host = std::max(host, l.host_bytes());
      // The candidate's own heap: as planned, else room for two copies of what it reads and
      // writes (a double-buffered exchange of every input), never under 256 MiB.
      size_t planned = job_.eval_problem(k).candidate_heap_bytes;
      own = std::max(own, planned ? planned : std::max(size_t{256} << 20, 2 * (l.set_device - eval::kGateBytes + l.set_host)));
    }
    r_.make_heap(device + own);
    sh_.base = static_cast<char*>(r_.heap->base(r_.rank)) + r_.heap->allocate(device);
    sh_.host = heap::export_host(r_.client, proto::kHostRegion + std::string("/") + std::to_string(r_.rank), host);
    sh_.gate = std::make_unique<CandidateGate>(r_.device, sh_.stream, sh_.base);
    sh_.gate->reset();
    // Its pid, before any candidate code exists here: the judge holds this process still
    // (launch/stopped.hpp) while it times the reference in its own.
    sh_.pair->send(proto::kReady, {{"heap_span", r_.heap->bytes() + r_.heap->pad_bytes()}, {"host_bytes", host},
                                   {"pid", static_cast<int64_t>(getpid())}});
  }

  // NCCL connects lazily and over new sockets, which the sandbox denies: a round of the
  // candidate's communicator makes every connection now.
  void connect() {
    if (!r_.comm) return;
    at::Tensor x = at::ones({r_.world * 64}, at::TensorOptions().device(r_.device).dtype(at::kFloat));
    at::Tensor y = at::empty_like(x);
    r_.comm->all_reduce(x);
    r_.comm->all_to_all(y, x);
    r_.comm->all_gather(y, x.narrow(0, 0, 64));
    device::synchronize(r_.device);
  }

  rank::Rank& r_;
  const rank::Job& job_;
  CandidateShared sh_;
};

}  // namespace

json run_candidate(rank::Rank& r) {
  // Never destroyed: the rank owns what the candidate's threads may still point into, and
  // the rank exits right after the result, with no teardown.
  auto* rank = new CandidateRank(r);
  return rank->run();
}

}  // namespace pkb::jobs
