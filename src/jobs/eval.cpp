// pkb eval on one rank.
//
// Inputs and outputs live in the symmetric heap, one "set" of slots per input set: set 0
// for the correctness trials, two warm-up sets, then one set per timed call (as many as
// the memory budget allows; when it allows fewer than the timed calls, a set is refilled
// with fresh draws between the calls that share it). So every trial and every timed call
// gets inputs no earlier call saw, drawn from the run's secret seed.
//
// What a call produced is judged from a capture of its outputs taken on ctx->stream right
// where the call's own work there ends (CUDA: a copy enqueued straight after the call,
// before pkb synchronises anything; CPU: a copy as pkb_run returns): work that lands
// later, from another stream or thread, is simply missing. The candidate runs before the
// reference in every trial, on its own copies, into outputs poisoned just before; every
// timed call (or, where memory is short, a secret sample of at least 20) is checked
// afterwards against the reference on regenerated inputs. That order and those checks
// defeat the attacks listed in docs/architecture.md: stale buffers, mutated inputs, cached
// or replayed results, batch-and-skip, work outside the timed stream or after the call.
//
// The candidate is loaded inside the sandbox (rank/sandbox.hpp), after pkb's own
// communicators are up.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>

#include "comm/comms.hpp"
#include "device/device.hpp"
#include "eval/candidate.hpp"
#include "eval/compare.hpp"
#include "jobs/context.hpp"
#include "jobs/jobs.hpp"
#include "launch/phases.hpp"
#include "rank/sandbox.hpp"
#include "tensor/dtypes.hpp"
#include "tensor/init.hpp"
#include "tensor/save.hpp"

namespace pkb::jobs {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using eval::CandidateCtx;
namespace phase = launch::phase;

// Input keys (trial numbers for the seeded streams): every call's inputs are its own.
constexpr int64_t kTimedKey = 1000000;  // + the timed call's number
constexpr int64_t kWarmKey = 2000000;
constexpr int64_t kConnectKey = 3000000;  // the reference run that makes NCCL connect
constexpr int kWarmSets = 2;
constexpr int kMinCaptures = 20;
constexpr size_t kAlign = 256;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Where each declared tensor sits within a set: every rank uses the same layout (the
// largest size any rank needs), so a tensor is at the same offset on every rank.
struct Layout {
  std::vector<size_t> in_off, out_off;
  size_t set_bytes = 0, out_bytes = 0;
};

Layout plan_layout(const spec::ProblemSpec& s, const std::string& size, int world, at::ScalarType dt) {
  Layout l;
  auto slot = [&](const spec::TensorSpec& t, bool output) {
    size_t most = 0;
    for (int q = 0; q < world; ++q) {
      int64_t n = 1;
      for (int64_t d : tensor::shape_of(t, s.vars_for(size, world, q))) n *= d;
      most = std::max(most, static_cast<size_t>(n) * c10::elementSize(tensor::resolve(t.dtype, dt)));
    }
    size_t bytes = (std::max<size_t>(most, 1) + kAlign - 1) / kAlign * kAlign;
    if (output) l.out_bytes += bytes;
    size_t off = l.set_bytes;
    l.set_bytes += bytes;
    return off;
  };
  for (auto& t : s.inputs) l.in_off.push_back(t.host ? 0 : slot(t, false));
  for (auto& t : s.outputs) l.out_off.push_back(t.host ? 0 : slot(t, true));
  return l;
}

// The tensors of one set as this rank sees them (heap views; host-declared tensors get
// plain host memory, outside the heap).
struct Set {
  std::vector<at::Tensor> in, out;
  std::vector<pkb_tensor> din, dout;  // what the candidate is handed
};

// A call's outputs as they were when its work on ctx->stream ended, and the sizes it
// reported for data-dependent dims.
struct Capture {
  std::vector<at::Tensor> out;
  std::vector<pkb_tensor> dout;
};

// The candidate's outputs at the sizes it reported for dynamic dims; a failure when a
// reported size does not fit.
json reported_outputs(const spec::ProblemSpec& s, const std::vector<at::Tensor>& full,
                      const std::vector<pkb_tensor>& dout, std::vector<at::Tensor>& outs, const std::string& ph,
                      int64_t trial);

// A failure found on this rank, as the parent reports it.
json failure(const std::string& verdict, const std::string& ph, int64_t trial, const std::string& output,
             const std::string& reason, const std::string& detail) {
  return {{"verdict", verdict}, {"phase", ph}, {"trial", trial}, {"output", output},
          {"reason", reason},   {"detail", detail}};
}

json reported_outputs(const spec::ProblemSpec& s, const std::vector<at::Tensor>& full,
                      const std::vector<pkb_tensor>& dout, std::vector<at::Tensor>& outs, const std::string& ph,
                      int64_t trial) {
  outs.clear();
  for (size_t i = 0; i < full.size(); ++i) {
    at::Tensor y = full[i];
    for (int d = 0; d < dout[i].ndim; ++d) {
      int64_t n = dout[i].sizes[d];
      if (n == y.size(d)) continue;
      if (!dout[i].dynamic[d] || n < 0 || n > y.size(d))
        return failure("wrong", ph, trial, s.outputs[i].name, "shape",
                       "the candidate reported size " + std::to_string(n) + " for dim " + std::to_string(d) +
                           " (capacity " + std::to_string(y.size(d)) +
                           (dout[i].dynamic[d] ? ")" : ", and the dim is not data-dependent)"));
      y = y.narrow(d, 0, n);
    }
    outs.push_back(y);
  }
  return nullptr;
}

class EvalJob {
 public:
  explicit EvalJob(rank::Rank& r) : r_(r), job_(r.job), pc_(r) {}

  json run() {
    auto t0 = Clock::now();
    stream_ = device::make_stream(r_.device);
    setup();
    times_["init_ms"] = ms_since(t0);
    t0 = Clock::now();
    json fail = trials();
    times_["trials_ms"] = ms_since(t0);
    json out = {{"failure", fail}, {"trials_run", trials_run_}, {"input_sets", timed_sets_},
                {"captured_calls", captured_.size()}, {"sandbox", sandbox_.to_json()}};
    if (fail.is_null() && job_.timing) {
      t0 = Clock::now();
      fail = timing(out);
      out["failure"] = fail;
      times_["timing_ms"] = ms_since(t0);
    }
    out["tolerated"] = {{"outputs", tolerated_outputs_}, {"max_elements", tolerated_max_}};
    r_.client.phase(phase::kFinish);
    cand_->finalize(cctx_->get());
    device::synchronize(r_.device);
    out["phase_ms"] = times_;
    return out;
  }

 private:
  // ---- set-up ---------------------------------------------------------------------------

  void setup() {
    // The candidate's own NCCL communicator, apart from the reference's.
    if (r_.comm->backend() == "nccl") cand_comm_ = r_.comm->split(0, r_.rank);
    make_sets();
    if (!job_.save_dir.empty()) std::filesystem::create_directories(job_.save_dir);  // writable in the sandbox
    // A .py candidate's interpreter (torch, Triton) starts before the sandbox, as pkb's own
    // work, under a deadline of its own.
    bool python = std::filesystem::path(job_.library).extension() == ".py";
    if (python) r_.client.phase(phase::kInterpreter);
    eval::LoadNeeds needs = eval::prepare_candidate(job_.library, r_.device.is_cuda());
    if (python) r_.client.phase(phase::kInit);
    if (job_.sandbox) {
      connect_communicators();
      std::string lib_dir = std::filesystem::path(job_.library).parent_path().string();
      std::string spec_dir = std::filesystem::path(job_.spec).parent_path().string();
      needs.read.insert(needs.read.end(), {lib_dir, spec_dir});
      needs.write.push_back(job_.save_dir);
      rank::SandboxPaths paths = rank::rank_paths(needs.read, needs.write);
      if (needs.processes) rank::allow_programs(paths, needs.exec);
      sandbox_ = rank::enter_sandbox(paths);
    }
    cand_ = eval::load_candidate(job_.library);  // its constructors (a module's import) run here, confined
    deny_if_violated("while being loaded");
    cctx_ = std::make_unique<CandidateCtx>(*r_.heap, r_.client, r_.device.is_cuda() ? r_.device.index() : -1, stream_,
                                           comm::nccl_handle(cand_comm_.get()), pc_.spec, pc_.ctx.vars());
    // pkb_init sees shapes and dtypes, no data.
    std::vector<pkb_tensor> din, dout;
    Set& s0 = sets_[0];
    for (size_t i = 0; i < pc_.spec.inputs.size(); ++i)
      din.push_back(eval::describe_shape(pc_.spec.inputs[i], s0.in[i].sizes().vec(), s0.in[i].scalar_type()));
    for (size_t i = 0; i < pc_.spec.outputs.size(); ++i)
      dout.push_back(eval::describe_shape(pc_.spec.outputs[i], s0.out[i].sizes().vec(), s0.out[i].scalar_type()));
    int rc = cand_->init(cctx_->get(), din, dout);
    device::synchronize(r_.device);
    deny_if_violated("in pkb_init");
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

  // The heap with its sets, and the buffers that capture timed calls' outputs.
  void make_sets() {
    Layout layout = plan_layout(pc_.spec, job_.size, r_.world, pc_.dt);
    int iters = std::max(job_.iters, 1);
    timed_sets_ = static_cast<int>(std::clamp<size_t>(job_.set_budget_bytes / layout.set_bytes, 1, iters));
    size_t harness = (1 + kWarmSets + timed_sets_) * layout.set_bytes;
    // The candidate's own heap: as asked, else room for two copies of what it reads and
    // writes (a double-buffered exchange of every input), never under 256 MiB.
    size_t own = job_.candidate_heap_bytes ? job_.candidate_heap_bytes
                                           : std::max(size_t{256} << 20, 2 * layout.set_bytes);
    r_.make_heap(harness + own);
    size_t first = r_.heap->allocate(harness);
    for (int k = 0; k < 1 + kWarmSets + timed_sets_; ++k) sets_.push_back(make_set(layout, first + k * layout.set_bytes));
    trial_capture_ = make_capture();
    if (!job_.timing) return;
    // Every timed call captured when memory allows; else a secret sample of them, the same
    // on every rank, drawn from the run's seed.
    int fit = static_cast<int>(std::min<size_t>(job_.capture_budget_bytes / std::max<size_t>(layout.out_bytes, 1), iters));
    int n = std::max(fit, std::min(iters, kMinCaptures));
    std::vector<int> calls(iters);
    std::iota(calls.begin(), calls.end(), 0);
    std::mt19937_64 pick(tensor::derive_seed(job_.seed, kTimedKey, 7));
    std::shuffle(calls.begin(), calls.end(), pick);
    calls.resize(n);
    std::sort(calls.begin(), calls.end());
    for (int c : calls) captured_.emplace(c, make_capture());
  }

  Set make_set(const Layout& layout, size_t offset) {
    Set set;
    char* base = static_cast<char*>(r_.heap->base(r_.rank)) + offset;
    auto view = [&](const spec::TensorSpec& t, size_t off) {
      at::ScalarType type = tensor::resolve(t.dtype, pc_.dt);
      auto shape = tensor::shape_of(t, pc_.ctx.vars());
      if (t.host) return at::empty(shape, at::TensorOptions().dtype(type));
      return tensor::view_of(base + off, shape, type, r_.device);
    };
    const auto& s = pc_.spec;
    // A tensor empty on this rank still has its slot (solution.h): its address, not the
    // null data pointer of an empty tensor.
    auto described = [&](const spec::TensorSpec& t, const at::Tensor& x, size_t off) {
      pkb_tensor d = eval::describe(t, x, !t.host);
      if (!t.host) d.data = base + off;
      return d;
    };
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      set.in.push_back(view(s.inputs[i], layout.in_off[i]));
      set.din.push_back(described(s.inputs[i], set.in.back(), layout.in_off[i]));
    }
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      set.out.push_back(view(s.outputs[i], layout.out_off[i]));
      set.dout.push_back(described(s.outputs[i], set.out.back(), layout.out_off[i]));
    }
    return set;
  }

  Capture make_capture() {
    Capture c;
    for (auto& y : sets_[0].out) c.out.push_back(at::empty_like(y));
    c.dout = sets_[0].dout;
    return c;
  }

  // NCCL connects lazily and over new sockets, which the sandbox denies: one reference run
  // and a round of the candidate's communicator make every connection now.
  void connect_communicators() {
    if (r_.comm->backend() != "nccl") return;
    Inputs in = pc_.inputs_for(kConnectKey);
    pc_.run_reference(in);
    if (cand_comm_) {
      at::Tensor x = at::ones({r_.world * 64}, at::TensorOptions().device(r_.device).dtype(at::kFloat));
      at::Tensor y = at::empty_like(x);
      cand_comm_->all_reduce(x);
      cand_comm_->all_to_all(y, x);
      cand_comm_->all_gather(y, x.narrow(0, 0, 64));
    }
    device::synchronize(r_.device);
  }

  void deny_if_violated(const std::string& when) {
    std::string v = rank::take_violation();
    if (!v.empty())
      throw rank::RankError("sandbox", "rank " + std::to_string(r_.rank) + ": " + when + ", the candidate tried " + v +
                                           ", which pkb's sandbox denies (candidates may not use the network, start "
                                           "processes or run programs)");
  }

  json sandbox_failure(const std::string& ph, int64_t trial) {
    std::string v = rank::take_violation();
    if (v.empty()) return nullptr;
    return failure("integrity_violation", ph, trial, "", "sandbox",
                   "the candidate tried " + v + ", which pkb's sandbox denies");
  }

  std::string explain() {
    std::string e = cctx_->take_error();
    return e.empty() ? "" : ": " + e;
  }

  // ---- calls and their judgement ------------------------------------------------------------

  void fill(Set& set, int64_t key) {
    Inputs in = pc_.inputs_for(key);
    for (size_t i = 0; i < in.size(); ++i) set.in[i].copy_(in.at(i));
  }

  void poison_outputs(Set& set, bool flip) {
    for (size_t i = 0; i < set.out.size(); ++i) {
      eval::poison(set.out[i], flip);
      // Dynamic dims start at their capacity; the candidate writes the real size.
      for (int d = 0; d < set.dout[i].ndim; ++d) set.dout[i].sizes[d] = set.out[i].size(d);
    }
  }

  // Runs the candidate on `set`; returns a failure or null.
  json call_candidate(Set& set, const std::string& ph, int64_t trial) {
    int rc = cand_->run(cctx_->get(), set.din, set.dout);
    if (rc != 0) return failure("wrong", ph, trial, "", "error", cand_->returned("pkb_run", rc) + explain());
    return nullptr;
  }

  // The outputs as ctx->stream holds them now (enqueued there on CUDA; done at once on the CPU).
  void capture(const Set& set, Capture& c) {
    for (size_t i = 0; i < set.out.size(); ++i) c.out[i].copy_(set.out[i], /*non_blocking=*/true);
    c.dout = set.dout;
  }

  json check_inputs(Set& set, const Inputs& pristine, const std::string& ph, int64_t trial) {
    for (size_t i = 0; i < pristine.size(); ++i)
      if (pc_.spec.inputs[i].readonly && !set.in[i].equal(pristine.at(i)))
        return failure("integrity_violation", ph, trial, pc_.spec.inputs[i].name, "input_mutated",
                       "the candidate changed the read-only input '" + pc_.spec.inputs[i].name + "'");
    return nullptr;
  }

  json compare_outputs(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, const std::string& ph,
                       int64_t trial) {
    ref::DrawnInputs inputs(pc_.ctx, *pc_.reference, trial);  // drawn only if a ties check asks
    for (size_t i = 0; i < got.size(); ++i) {
      eval::Mismatch m = eval::compare_output(pc_.spec.outputs[i], i, got, want, {*pc_.reference, pc_.ctx, inputs});
      if (!m.ok) {
        json f = failure("wrong", ph, trial, pc_.spec.outputs[i].name, m.reason, m.detail);
        f.update(m.to_json());
        return f;
      }
      if (m.bad > 0) {  // within the output's mismatch allowance: said in the verdict
        ++tolerated_outputs_;
        tolerated_max_ = std::max(tolerated_max_, m.bad);
      }
    }
    return nullptr;
  }

  // A call's captured outputs against the reference's. When they are wrong but the live
  // buffers (`live`, if still this call's) are right, the work landed after the call's own
  // work on ctx->stream: another stream, another thread, or after pkb_run returned.
  json judge_call(const Capture& c, const Set* live, const std::vector<at::Tensor>& want, const std::string& ph,
                  int64_t trial) {
    std::vector<at::Tensor> got;
    json fail = reported_outputs(pc_.spec, c.out, c.dout, got, ph, trial);
    if (fail.is_null()) fail = compare_outputs(got, want, ph, trial);
    if (fail.is_null() || !live) return fail;
    std::vector<at::Tensor> later;
    if (!reported_outputs(pc_.spec, live->out, live->dout, later, ph, trial).is_null()) return fail;
    if (!compare_outputs(later, want, ph, trial).is_null()) return fail;
    return failure("integrity_violation", ph, trial, fail["output"], "late_work",
                   "the output was wrong when the call's work on ctx->stream ended (" + fail["detail"].get<std::string>() +
                       ") and right later: work ran on another stream or thread, or after pkb_run returned; order all "
                       "work on ctx->stream (join forked streams back) and finish before returning");
  }

  // Every rank learns whether any rank failed; the first failure (by rank) is returned.
  json agree(const json& mine, int trial = -1) {
    r_.client.phase(phase::kSync, trial);
    auto all = r_.client.all_gather(r_.rank, r_.world, mine.dump());
    for (int q = 0; q < r_.world; ++q) {
      json f = json::parse(all[q]);
      if (!f.is_null()) {
        f["rank"] = q;
        return f;
      }
    }
    return nullptr;
  }

  void save(int64_t trial, const Inputs& in, const std::vector<at::Tensor>& cand, const std::vector<at::Tensor>& ref) {
    const std::string& dir = job_.save_dir;
    if (dir.empty()) return;
    std::string rk = "/rank_" + std::to_string(r_.rank) + ".pt";
    for (auto sub : {"/reference", "/candidate", "/inputs"}) std::filesystem::create_directories(dir + sub);
    tensor::save_outputs(dir + "/reference" + rk, ref);
    tensor::save_outputs(dir + "/candidate" + rk, cand);
    tensor::save_named(dir + "/inputs" + rk, in.names(), in.tensors());
    std::ofstream(dir + "/trial.txt") << trial << "\n";
  }

  // ---- trials -----------------------------------------------------------------------------

  json trials() {
    Set& set = sets_[0];
    for (int t = 0; t < job_.trials; ++t) {
      r_.client.phase(phase::kTrial, t);
      Inputs pristine = pc_.inputs_for(t);
      for (size_t i = 0; i < pristine.size(); ++i) set.in[i].copy_(pristine.at(i));
      poison_outputs(set, t % 2);
      device::sync_stream(r_.device, stream_);
      json fail = call_candidate(set, phase::kTrial, t);
      capture(set, trial_capture_);
      // Device errors (and work the candidate left on other streams) surface here.
      device::synchronize(r_.device);
      if (fail.is_null()) fail = sandbox_failure(phase::kTrial, t);
      if (fail.is_null()) fail = check_inputs(set, pristine, phase::kTrial, t);
      // Every rank runs the reference, whatever its candidate did: it communicates.
      Inputs ref_in = pristine.clone();
      std::vector<at::Tensor> want = pc_.run_reference(ref_in);
      if (fail.is_null()) fail = judge_call(trial_capture_, &set, want, phase::kTrial, t);
      trials_run_ = t + 1;
      if (t == 0 || !fail.is_null()) {
        std::vector<at::Tensor> got;
        reported_outputs(pc_.spec, trial_capture_.out, trial_capture_.dout, got, phase::kTrial, t);
        save(t, pristine, got.empty() ? trial_capture_.out : got, want);
      }
      json any = agree(fail, t);
      if (!any.is_null()) return any;
    }
    return nullptr;
  }

  // ---- timing -----------------------------------------------------------------------------

  Set& timed(int j) { return sets_.at(1 + kWarmSets + j); }
  Set& warm(int k) { return sets_.at(1 + k); }
  int set_of(int call) const { return call % timed_sets_; }
  // Whether `call` was the last to use its set (whose live buffers are then its own).
  bool last_of_set(int call) const { return call + timed_sets_ >= job_.iters; }

  // Warm-up and timed calls of `call` (candidate or reference). Timed call i runs on the
  // inputs of key kTimedKey + i: a set shared by several calls is refilled between them,
  // outside the timed region. For the candidate (`checked`), outputs are poisoned before
  // every call and captured on the stream right after the calls chosen for checking.
  std::vector<double> time_calls(const std::string& who, const std::function<json(Set&, int64_t)>& call, bool checked,
                                 json& fail) {
    int warmup = job_.warmup, iters = job_.iters;
    bool cold = job_.cache == "cold";
    r_.client.phase(who + "_warmup");
    for (int i = 0; i < warmup && fail.is_null(); ++i) fail = call(warm(i % kWarmSets), kWarmKey + i % kWarmSets);
    device::synchronize(r_.device);
    if (!fail.is_null()) return {};
    for (int j = 0; j < timed_sets_; ++j) {
      fill(timed(j), kTimedKey + j);
      if (checked) poison_outputs(timed(j), false);
    }
    device::synchronize(r_.device);
    // Align the ranks: a host barrier, then a device barrier that absorbs launch skew.
    r_.client.barrier(r_.world);
    device::heap_barrier(*r_.heap, pkb_channel(), stream_);
    r_.client.phase(who + "_timing");
    auto timer = device::make_timer(r_.device, stream_, iters);
    for (int i = 0; i < iters && fail.is_null(); ++i) {
      Set& set = timed(set_of(i));
      if (i >= timed_sets_) {
        fill(set, kTimedKey + i);
        if (checked) poison_outputs(set, (i / timed_sets_) % 2);
      }
      if (cold) device::flush_l2(r_.device, stream_);
      timer->start(i);
      fail = call(set, kTimedKey + i);
      timer->stop(i);
      if (checked && captured_.count(i)) capture(set, captured_.at(i));
    }
    std::vector<double> us = timer->elapsed_us();
    device::synchronize(r_.device);
    if (checked && fail.is_null()) fail = sandbox_failure(who + "_timing", -1);
    return us;
  }

  // The last channel of the signal pads is pkb's (candidates get the others).
  int pkb_channel() const { return static_cast<int>(r_.heap->pad_bytes() / sizeof(uint32_t) / r_.world) - 1; }

  json timing(json& out) {
    r_.client.phase(phase::kTimingSetup);
    for (int k = 0; k < kWarmSets; ++k) fill(warm(k), kWarmKey + k);
    device::synchronize(r_.device);
    // The device's copy bandwidth at this problem's output size, timed like a call: what a
    // copy-bound candidate should reach.
    if (r_.rank == 0 && r_.device.is_cuda()) {
      size_t bytes = 0;
      for (auto& y : sets_[0].out) bytes += y.nbytes();
      out["device_copy"] = {{"bytes", bytes}, {"median_us", device::copy_us(r_.device, bytes)}};
    }
    r_.client.barrier(r_.world);

    device::Clocks before = device::read_clocks(r_.device);
    json fail;
    out["candidate_us"] = time_calls("candidate", [&](Set& s, int64_t key) {
      return call_candidate(s, phase::kCandidateTiming, key);
    }, true, fail);
    device::Clocks after = device::read_clocks(r_.device);
    out["clocks"] = {{"sm_mhz_before", before.sm_mhz}, {"sm_mhz_after", after.sm_mhz},
                     {"max_sm_mhz", after.max_sm_mhz}, {"throttle_reasons", after.throttle_reasons},
                     {"throttled", before.throttled || after.throttled}};
    // Inputs first: the reference's timing refills the sets.
    if (fail.is_null()) fail = check_timed_inputs();
    if (fail.is_null()) escape_check(out);
    json any = agree(fail);
    if (!any.is_null()) return any;

    if (job_.time_reference) {
      out["reference_us"] = time_calls("reference", [&](Set& s, int64_t) {
        Inputs in;
        for (size_t i = 0; i < s.in.size(); ++i) in.add(pc_.spec.inputs[i].name, s.in[i]);
        pc_.reference->run(pc_.ctx, in);
        return json();
      }, false, fail);
    }
    r_.client.phase(phase::kTimingChecks);
    fail = check_timed_calls();
    return agree(fail);
  }

  // Each timed set's read-only inputs after the last call that used it.
  json check_timed_inputs() {
    for (int i = std::max(0, job_.iters - timed_sets_); i < job_.iters; ++i) {
      json fail = check_inputs(timed(set_of(i)), pc_.inputs_for(kTimedKey + i), phase::kCandidateTiming, kTimedKey + i);
      if (!fail.is_null()) return fail;
    }
    return nullptr;
  }

  // The captured timed calls against the reference on regenerated inputs: replayed,
  // cached, skipped or late work shows here. Late work is named wherever a call shows it
  // (only the last call of a set still has its live outputs); else the first wrong call.
  json check_timed_calls() {
    json first;
    for (auto& [i, cap] : captured_) {
      Inputs pristine = pc_.inputs_for(kTimedKey + i);
      std::vector<at::Tensor> want = pc_.run_reference(pristine);
      const Set* live = last_of_set(i) ? &timed(set_of(i)) : nullptr;
      json fail = judge_call(cap, live, want, phase::kCandidateTiming, kTimedKey + i);
      if (fail.is_null()) continue;
      fail["detail"] = "timed call " + std::to_string(i) + ": " + fail["detail"].get<std::string>();
      if (fail["reason"] == "late_work") return fail;
      if (first.is_null()) first = fail;
    }
    return first;
  }

  // Work the candidate leaves off the timed stream: device-synchronised host time of a
  // batch of calls against the timed stream's event time for the batch. Work escaping to
  // other streams or threads piles up outside the events, call after call; the same batch
  // with no calls gives pkb's own overhead.
  void escape_check(json& out) {
    if (!r_.device.is_cuda()) return;
    r_.client.phase(phase::kEscapeCheck);
    constexpr int kBatch = 20, kRepeats = 3;
    auto batch = [&](bool calls, std::vector<double>& host, std::vector<double>& event) {
      device::synchronize(r_.device);
      auto timer = device::make_timer(r_.device, stream_, 1);
      auto t0 = Clock::now();
      timer->start(0);
      for (int i = 0; i < kBatch && calls; ++i) call_candidate(warm(i % kWarmSets), phase::kEscapeCheck, kWarmKey);
      timer->stop(0);
      device::synchronize(r_.device);
      host.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      event.push_back(timer->elapsed_us()[0]);
    };
    std::vector<double> base_host, base_event, host, event;
    for (int k = 0; k < kRepeats; ++k) {
      batch(false, base_host, base_event);
      batch(true, host, event);
    }
    // One call captured into a graph: work forked off the stream and never joined fails it.
    device::synchronize(r_.device);
    device::Joined joined =
        device::capture_joined(r_.device, stream_, [&] { call_candidate(warm(0), phase::kEscapeCheck, kWarmKey); });
    device::synchronize(r_.device);
    out["escape"] = {{"calls", kBatch}, {"host_us", host}, {"event_us", event}, {"baseline_host_us", base_host},
                     {"capture", joined == device::Joined::yes ? "joined" : joined == device::Joined::no ? "unjoined" : "unknown"}};
  }

  rank::Rank& r_;
  const rank::Job& job_;
  ProblemContext pc_;
  std::unique_ptr<eval::Candidate> cand_;
  std::unique_ptr<Comm> cand_comm_;
  std::unique_ptr<CandidateCtx> cctx_;
  std::vector<Set> sets_;
  Capture trial_capture_;
  std::map<int, Capture> captured_;  // timed call -> its capture
  rank::SandboxStatus sandbox_;
  void* stream_ = nullptr;
  int timed_sets_ = 1;
  int trials_run_ = 0;
  int tolerated_outputs_ = 0;  // outputs compared with elements outside atol/rtol, within mismatch
  int64_t tolerated_max_ = 0;  // the most such elements in one output
  json times_ = json::object();
};

}  // namespace

json run_eval(rank::Rank& r) {
  // Never destroyed: the job owns the candidate's communicator, which must outlive an error
  // report (worker/worker.cpp), and the rank exits right after the result, with no teardown.
  auto* job = new EvalJob(r);
  return job->run();
}

}  // namespace pkb::jobs
