// pkb eval on one rank.
//
// Inputs and outputs live in the symmetric heap, one "set" of slots per input set: set 0
// for the correctness trials, two warm-up sets, then one set per timed call (as many as
// the memory budget allows). Each trial and each timed call gets inputs drawn afresh from
// the run's secret seed; the candidate runs before the reference in every trial, on its
// own copies, into outputs poisoned just before; afterwards every timed call's outputs are
// checked against the reference recomputed from regenerated inputs. That order and those
// checks defeat the attacks in shared/notes/anchors.md: stale buffers, mutated inputs,
// cached or replayed results, batch-and-skip, work outside the timed stream.
#include <ATen/ATen.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>

#include "comm/comms.hpp"
#include "device/device.hpp"
#include "eval/candidate.hpp"
#include "eval/compare.hpp"
#include "eval/jobs.hpp"
#include "spec/dtype.hpp"
#include "tensor/dtypes.hpp"
#include "tensor/init.hpp"
#include "tensor/save.hpp"
#include "worker/rank.hpp"
#include "worker/references.hpp"
#include "worker/run_reference.hpp"

namespace pkb::eval {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int64_t kTimedKey = 1000000;  // input keys of timed sets: distinct from trials'
constexpr int64_t kWarmKey = 2000000;
constexpr int kWarmSets = 2;
constexpr size_t kAlign = 256;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Where each declared tensor sits within a set: every rank uses the same layout (the
// largest size any rank needs), so a tensor is at the same offset on every rank.
struct Layout {
  std::vector<size_t> in_off, out_off;
  size_t set_bytes = 0;
};

Layout plan_layout(const spec::ProblemSpec& s, const std::string& preset, int world, at::ScalarType dt) {
  Layout l;
  auto slot = [&](const spec::TensorSpec& t) {
    size_t most = 0;
    for (int q = 0; q < world; ++q) {
      int64_t n = 1;
      for (int64_t d : tensor::shape_of(t, s.vars_for(preset, world, q))) n *= d;
      most = std::max(most, static_cast<size_t>(n) * c10::elementSize(tensor::resolve(t.dtype, dt)));
    }
    size_t off = l.set_bytes;
    l.set_bytes += (std::max<size_t>(most, 1) + kAlign - 1) / kAlign * kAlign;
    return off;
  };
  for (auto& t : s.inputs) l.in_off.push_back(t.host ? 0 : slot(t));
  for (auto& t : s.outputs) l.out_off.push_back(t.host ? 0 : slot(t));
  return l;
}

// The tensors of one set as this rank sees them (heap views; host-declared tensors get
// plain host memory, outside the heap).
struct Set {
  std::vector<at::Tensor> in, out;
  std::vector<pkb_tensor> din, dout;  // what the candidate is handed
};

class Sets {
 public:
  Sets(worker::Rank& r, worker::RefCtx& ctx, const Layout& layout, size_t first_offset, int count) {
    const auto& s = ctx.spec();
    for (int k = 0; k < count; ++k) {
      Set set;
      char* base = static_cast<char*>(r.heap->base(r.rank)) + first_offset + k * layout.set_bytes;
      auto view = [&](const spec::TensorSpec& t, size_t off) {
        at::ScalarType type = tensor::resolve(t.dtype, ctx.dtype());
        auto shape = tensor::shape_of(t, ctx.vars());
        if (t.host) return at::empty(shape, at::TensorOptions().dtype(type));
        return at::from_blob(base + off, shape, at::TensorOptions().dtype(type).device(r.device));
      };
      for (size_t i = 0; i < s.inputs.size(); ++i) {
        set.in.push_back(view(s.inputs[i], layout.in_off[i]));
        set.din.push_back(describe(s.inputs[i], set.in.back(), !s.inputs[i].host));
      }
      for (size_t i = 0; i < s.outputs.size(); ++i) {
        set.out.push_back(view(s.outputs[i], layout.out_off[i]));
        set.dout.push_back(describe(s.outputs[i], set.out.back(), !s.outputs[i].host));
      }
      sets_.push_back(std::move(set));
    }
  }
  Set& operator[](size_t k) { return sets_.at(k); }

  void fill(Set& set, const Inputs& in) {
    for (size_t i = 0; i < in.size(); ++i) set.in[i].copy_(in.at(i));
  }
  void poison_outputs(Set& set, bool flip) {
    for (size_t i = 0; i < set.out.size(); ++i) {
      poison(set.out[i], flip);
      // Dynamic dims start at their capacity; the candidate writes the real size.
      for (int d = 0; d < set.dout[i].ndim; ++d) set.dout[i].sizes[d] = set.out[i].size(d);
    }
  }

 private:
  std::vector<Set> sets_;
};

// A failure found on this rank, as the parent reports it.
json failure(const std::string& verdict, const std::string& phase, int64_t trial, const std::string& output,
             const std::string& reason, const std::string& detail) {
  return {{"verdict", verdict}, {"phase", phase}, {"trial", trial}, {"output", output},
          {"reason", reason},   {"detail", detail}};
}

class EvalJob {
 public:
  explicit EvalJob(worker::Rank& r)
      : r_(r),
        spec_(spec::load_spec(r.job.at("spec"))),
        preset_(r.job.value("preset", "default")),
        dt_(tensor::resolve(r.job.value("dtype", spec_.dtype), at::kFloat)),
        ctx_(spec_, spec_.vars_for(preset_, r.world, r.rank), r.device, dt_, r.comm.get(),
             std::stoull(r.job.at("seed").get<std::string>())),
        ref_(worker::create_reference(spec_.slug)) {}

  json run() {
    auto t0 = Clock::now();
    stream_ = device::make_stream(r_.device);
    setup();
    times_["init_ms"] = ms_since(t0);
    t0 = Clock::now();
    json fail = trials();
    times_["trials_ms"] = ms_since(t0);
    json out = {{"failure", fail}, {"trials_run", trials_run_}, {"input_sets", timed_sets_}};
    if (fail.is_null() && r_.job.value("timing", true)) {
      t0 = Clock::now();
      fail = timing(out);
      out["failure"] = fail;
      times_["timing_ms"] = ms_since(t0);
    }
    r_.client.phase("finish");
    cand_->finalize(cctx_->get());
    device::synchronize(r_.device);
    out["phase_ms"] = times_;
    return out;
  }

 private:
  void setup() {
    ref_->setup(ctx_);
    cand_ = std::make_unique<Candidate>(r_.job.at("library").get<std::string>());
    // The candidate's own NCCL communicator, apart from the reference's.
    if (r_.comm->backend() == "nccl") cand_comm_ = r_.comm->split(0, r_.rank);

    Layout layout = plan_layout(spec_, preset_, r_.world, dt_);
    int iters = r_.job.value("iters", 100);
    size_t budget = r_.job.value("set_budget_bytes", size_t{1} << 30);
    timed_sets_ = static_cast<int>(std::clamp<size_t>(budget / layout.set_bytes, 1, std::max(iters, 1)));
    size_t harness = (1 + kWarmSets + timed_sets_) * layout.set_bytes;
    r_.make_heap(harness + r_.job.value("candidate_heap_bytes", size_t{256} << 20));
    size_t first = r_.heap->allocate(harness);
    sets_ = std::make_unique<Sets>(r_, ctx_, layout, first, 1 + kWarmSets + timed_sets_);
    pkb_channel_ = static_cast<int>(r_.heap->pad_bytes() / sizeof(uint32_t) / r_.world) - 1;

    cctx_ = std::make_unique<CandidateCtx>(*r_.heap, r_.client, r_.device.is_cuda() ? r_.device.index() : -1, stream_,
                                           comm::nccl_handle(cand_comm_.get()), spec_, ctx_.vars());
    // pkb_init sees shapes and dtypes, no data.
    std::vector<pkb_tensor> din, dout;
    Set& s0 = (*sets_)[0];
    for (size_t i = 0; i < spec_.inputs.size(); ++i)
      din.push_back(describe_shape(spec_.inputs[i], s0.in[i].sizes().vec(), s0.in[i].scalar_type()));
    for (size_t i = 0; i < spec_.outputs.size(); ++i)
      dout.push_back(describe_shape(spec_.outputs[i], s0.out[i].sizes().vec(), s0.out[i].scalar_type()));
    int rc = cand_->init(cctx_->get(), din, dout);
    device::synchronize(r_.device);
    if (rc != 0) throw std::runtime_error("pkb_init returned " + std::to_string(rc) + explain());
    cctx_->end_init();
    // Symmetric means symmetric: every rank must have allocated the same buffers.
    auto layouts = r_.client.all_gather(r_.rank, r_.world, r_.heap->layout());
    for (int q = 0; q < r_.world; ++q)
      if (layouts[q] != layouts[0])
        throw std::runtime_error("ranks 0 and " + std::to_string(q) +
                                 " made different symm_alloc calls in pkb_init; every rank must allocate the same "
                                 "sizes in the same order");
  }

  std::string explain() {
    std::string e = cctx_->take_error();
    return e.empty() ? "" : ": " + e;
  }

  // Runs the candidate on `set`; returns a failure or null.
  json call_candidate(Set& set, const std::string& phase, int64_t trial) {
    int rc = cand_->run(cctx_->get(), set.din, set.dout);
    if (rc != 0)
      return failure("wrong", phase, trial, "", "error", "pkb_run returned " + std::to_string(rc) + explain());
    return nullptr;
  }

  // The candidate's outputs at the sizes it reported for dynamic dims.
  json outputs_of(Set& set, std::vector<at::Tensor>& outs, const std::string& phase, int64_t trial) {
    outs.clear();
    for (size_t i = 0; i < set.out.size(); ++i) {
      at::Tensor y = set.out[i];
      for (int d = 0; d < set.dout[i].ndim; ++d) {
        int64_t n = set.dout[i].sizes[d];
        if (n == y.size(d)) continue;
        if (!set.dout[i].dynamic[d] || n < 0 || n > y.size(d))
          return failure("wrong", phase, trial, spec_.outputs[i].name, "shape",
                         "the candidate reported size " + std::to_string(n) + " for dim " + std::to_string(d) +
                             " (capacity " + std::to_string(y.size(d)) +
                             (set.dout[i].dynamic[d] ? ")" : ", and the dim is not data-dependent)"));
        y = y.narrow(d, 0, n);
      }
      outs.push_back(y);
    }
    return nullptr;
  }

  json check_inputs(Set& set, const Inputs& pristine, const std::string& phase, int64_t trial) {
    for (size_t i = 0; i < pristine.size(); ++i)
      if (spec_.inputs[i].readonly && !set.in[i].equal(pristine.at(i)))
        return failure("integrity_violation", phase, trial, spec_.inputs[i].name, "input_mutated",
                       "the candidate changed the read-only input '" + spec_.inputs[i].name + "'");
    return nullptr;
  }

  json compare_outputs(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want,
                       const std::string& phase, int64_t trial) {
    for (size_t i = 0; i < got.size(); ++i) {
      const auto& t = spec_.outputs[i];
      spec::DType d = tensor::from_aten(want[i].scalar_type());
      Mismatch m = compare(got[i], want[i], t.atol.value_or(spec::default_atol(d)), t.rtol.value_or(spec::default_rtol(d)));
      if (!m.ok) {
        json f = failure("wrong", phase, trial, t.name, m.reason, m.detail);
        f.update(m.to_json());
        return f;
      }
    }
    return nullptr;
  }

  // Every rank learns whether any rank failed; the first failure (by rank) is returned.
  json agree(const json& mine) {
    r_.client.phase("sync", ctx_.trial());
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
    std::string dir = r_.job.value("save_dir", "");
    if (dir.empty()) return;
    std::string rk = "/rank_" + std::to_string(r_.rank) + ".pt";
    for (auto sub : {"/reference", "/candidate", "/inputs"}) std::filesystem::create_directories(dir + sub);
    tensor::save_outputs(dir + "/reference" + rk, ref);
    tensor::save_outputs(dir + "/candidate" + rk, cand);
    tensor::save_named(dir + "/inputs" + rk, in.names(), in.tensors());
    std::ofstream(dir + "/trial.txt") << trial << "\n";
  }

  json trials() {
    int n = r_.job.value("trials", 100);
    Set& set = (*sets_)[0];
    for (int t = 0; t < n; ++t) {
      r_.client.phase("trial", t);
      ctx_.begin_trial(t);
      Inputs pristine = build_inputs(ctx_, *ref_);
      sets_->fill(set, pristine);
      sets_->poison_outputs(set, t % 2);
      device::sync_stream(r_.device, stream_);
      json fail = call_candidate(set, "trial", t);
      // Device errors (and work the candidate left on other streams) surface here.
      device::synchronize(r_.device);
      std::vector<at::Tensor> got;
      if (fail.is_null()) fail = check_inputs(set, pristine, "trial", t);
      if (fail.is_null()) fail = outputs_of(set, got, "trial", t);
      // Every rank runs the reference, whatever its candidate did: it communicates.
      Inputs ref_in = pristine.clone();
      std::vector<at::Tensor> want = ref_->run(ctx_, ref_in);
      device::synchronize(r_.device);
      worker::check_outputs(ctx_, want, "the reference");
      // Timing hands the reference the candidate's input slots: it must leave them alone.
      for (size_t i = 0; i < ref_in.size(); ++i)
        if (spec_.inputs[i].readonly && !ref_in.at(i).equal(pristine.at(i)))
          throw std::runtime_error("the reference changed its read-only input '" + spec_.inputs[i].name + "'");
      if (fail.is_null()) fail = compare_outputs(got, want, "trial", t);
      trials_run_ = t + 1;
      if (t == 0 || !fail.is_null()) save(t, pristine, got.empty() ? set.out : got, want);
      json any = agree(fail);
      if (!any.is_null()) return any;
    }
    return nullptr;
  }

  // Warm-up and timed calls of `call` (candidate or reference) on the timed sets. For the
  // candidate (`checked`), every timed call writes into poisoned outputs that are checked
  // afterwards; the reference writes into outputs of its own.
  std::vector<double> time_calls(const std::string& who, const std::function<json(Set&, int64_t)>& call, bool checked,
                                 json& fail) {
    int warmup = r_.job.value("warmup", 500), iters = r_.job.value("iters", 100);
    bool cold = r_.job.value("cache", "cold") == "cold";
    r_.client.phase(who + "_warmup");
    for (int i = 0; i < warmup && fail.is_null(); ++i) fail = call((*sets_)[1 + i % kWarmSets], kWarmKey + i % kWarmSets);
    device::synchronize(r_.device);
    if (!fail.is_null()) return {};
    if (checked)
      for (int j = 0; j < timed_sets_; ++j) sets_->poison_outputs(timed(j), j % 2);
    device::synchronize(r_.device);
    // Align the ranks: a host barrier, then a device barrier that absorbs launch skew.
    r_.client.barrier(r_.world);
    device::heap_barrier(*r_.heap, pkb_channel_, stream_);
    r_.client.phase(who + "_timing");
    auto timer = device::make_timer(r_.device, stream_, iters);
    for (int i = 0; i < iters && fail.is_null(); ++i) {
      int j = i % timed_sets_;
      if (checked && i >= timed_sets_) sets_->poison_outputs(timed(j), (i / timed_sets_) % 2);  // reused: poison again
      if (cold) device::flush_l2(r_.device, stream_);
      timer->start(i);
      fail = call(timed(j), kTimedKey + j);
      timer->stop(i);
    }
    std::vector<double> us = timer->elapsed_us();
    device::synchronize(r_.device);
    return us;
  }

  Set& timed(int j) { return (*sets_)[1 + kWarmSets + j]; }

  json timing(json& out) {
    r_.client.phase("timing_setup");
    // Timed inputs: fresh draws, never seen in trials or warm-up.
    for (int k = 0; k < kWarmSets; ++k) fill_set((*sets_)[1 + k], kWarmKey + k);
    for (int j = 0; j < timed_sets_; ++j) fill_set(timed(j), kTimedKey + j);
    device::synchronize(r_.device);
    // The device's copy bandwidth at this problem's output size, timed like a call: what a
    // copy-bound candidate should reach.
    if (r_.rank == 0 && r_.device.is_cuda()) {
      size_t bytes = 0;
      for (auto& y : (*sets_)[0].out) bytes += y.nbytes();
      out["device_copy"] = {{"bytes", bytes}, {"median_us", device::copy_us(r_.device, bytes)}};
    }
    r_.client.barrier(r_.world);

    device::Clocks before = device::read_clocks(r_.device);
    json fail;
    out["candidate_us"] =
        time_calls("candidate", [&](Set& s, int64_t key) { return call_candidate(s, "timing", key); }, true, fail);
    device::Clocks after = device::read_clocks(r_.device);
    out["clocks"] = {{"sm_mhz_before", before.sm_mhz}, {"sm_mhz_after", after.sm_mhz},
                     {"max_sm_mhz", after.max_sm_mhz}, {"throttle_reasons", after.throttle_reasons},
                     {"throttled", before.throttled || after.throttled}};
    if (fail.is_null()) escape_check(out);
    json any = agree(fail);
    if (!any.is_null()) return any;

    if (r_.job.value("time_reference", true)) {
      out["reference_us"] = time_calls("reference", [&](Set& s, int64_t) {
        Inputs in;
        for (size_t i = 0; i < s.in.size(); ++i) in.add(spec_.inputs[i].name, s.in[i]);
        ref_->run(ctx_, in);
        return json();
      }, false, fail);
    }
    // Every timed call's outputs against the reference on regenerated inputs: replayed,
    // cached or skipped calls show here.
    r_.client.phase("timing_checks");
    for (int j = 0; j < timed_sets_ && fail.is_null(); ++j) {
      ctx_.begin_trial(kTimedKey + j);
      Inputs pristine = build_inputs(ctx_, *ref_);
      std::vector<at::Tensor> got;
      fail = check_inputs(timed(j), pristine, "timing", kTimedKey + j);
      if (fail.is_null()) fail = outputs_of(timed(j), got, "timing", kTimedKey + j);
      std::vector<at::Tensor> want = ref_->run(ctx_, pristine);
      device::synchronize(r_.device);
      if (fail.is_null()) fail = compare_outputs(got, want, "timing", kTimedKey + j);
      if (!fail.is_null()) fail["detail"] = "timed call " + std::to_string(j) + ": " + fail["detail"].get<std::string>();
    }
    return agree(fail);
  }

  void fill_set(Set& set, int64_t key) {
    ctx_.begin_trial(key);
    sets_->fill(set, build_inputs(ctx_, *ref_));
  }

  // Work the candidate leaves off the timed stream: device-synchronised host time of a
  // batch of calls against the timed stream's event time for the batch. Work escaping to
  // other streams or threads piles up outside the events, call after call; the same batch
  // with no calls gives pkb's own overhead.
  void escape_check(json& out) {
    if (!r_.device.is_cuda()) return;
    r_.client.phase("escape_check");
    constexpr int kBatch = 20, kRepeats = 3;
    auto batch = [&](bool calls, std::vector<double>& host, std::vector<double>& event) {
      device::synchronize(r_.device);
      auto timer = device::make_timer(r_.device, stream_, 1);
      auto t0 = Clock::now();
      timer->start(0);
      for (int i = 0; i < kBatch && calls; ++i) call_candidate((*sets_)[1 + i % kWarmSets], "timing", kWarmKey);
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
    device::Joined joined = device::capture_joined(r_.device, stream_, [&] { call_candidate((*sets_)[1], "timing", kWarmKey); });
    device::synchronize(r_.device);
    out["escape"] = {{"calls", kBatch}, {"host_us", host}, {"event_us", event}, {"baseline_host_us", base_host},
                     {"capture", joined == device::Joined::yes ? "joined" : joined == device::Joined::no ? "unjoined" : "unknown"}};
  }

  worker::Rank& r_;
  spec::ProblemSpec spec_;
  std::string preset_;
  at::ScalarType dt_;
  worker::RefCtx ctx_;
  std::unique_ptr<Reference> ref_;
  std::unique_ptr<Candidate> cand_;
  std::unique_ptr<Comm> cand_comm_;
  std::unique_ptr<CandidateCtx> cctx_;
  std::unique_ptr<Sets> sets_;
  void* stream_ = nullptr;
  int timed_sets_ = 1;
  int pkb_channel_ = 0;
  int trials_run_ = 0;
  json times_ = json::object();
};

}  // namespace

json run_eval(worker::Rank& r) {
  // Not destroyed when run() throws: the job owns the candidate's communicator, which must
  // outlive the error report (worker/worker.cpp), and the rank exits right after it.
  auto* job = new EvalJob(r);
  json out = job->run();
  delete job;
  return out;
}

}  // namespace pkb::eval
