#include "run/evaluation.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "build/built_with.hpp"
#include "build/builder.hpp"
#include "build/sha256.hpp"
#include "eval/memory_plan.hpp"
#include "eval/record.hpp"
#include "eval/stats.hpp"
#include "eval/verdict.hpp"
#include "io/clock.hpp"
#include "io/files.hpp"
#include "io/input_error.hpp"
#include "io/text.hpp"
#include "launch/phases.hpp"
#include "pkb_commit.h"
#include "run/placing.hpp"

namespace pkb::run {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace phase = launch::phase;

namespace {

constexpr int kMinCaptures = 20;  // timed calls checked at least, where memory is short

// printf into a string: the lines the evaluation says.
__attribute__((format(printf, 1, 2))) std::string line(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

using io::seconds_since;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// ---- the run placed ---------------------------------------------------------------------------

// The judge and the candidate rank beside it share each GPU; the judge's clock sees the
// candidate's calls only where their work runs side by side in one GPU context (MPS):
// between separate contexts the GPU time-slices, and a call's span holds the other
// context's slices (some 280 us on the H200 for a 9 us call). pkb starts a private daemon.
launch::Placement place_run(const EvalRequest& q, const Say& warn) {
  launch::PlaceRequest req = q.place;
  req.mps = req.mps || (q.settings.timing && !req.no_mps);
  launch::Placement p = launch::place(req, q.problems.size() == 1 ? q.problems.front() : nullptr, q.settings.size);
  for (auto& w : p.warnings) warn(w);
  // The gate holds a candidate's stream until its judge says go, while the call is being
  // enqueued: with every launch blocking, the first one would wait for ever.
  const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
  if (p.device == launch::Device::cuda && blocking && std::string(blocking) != "0" && std::string(blocking) != "")
    throw io::InputError("pkb eval cannot run with CUDA_LAUNCH_BLOCKING=" + std::string(blocking) +
                         ": its judges hold the candidate's stream while a call is enqueued, so a blocking launch "
                         "waits for ever; unset it");
  if (p.device == launch::Device::cuda && q.settings.timing && !p.mps)
    warn("no MPS: the judges cannot time the candidate's calls, so its own events are used and its timing counts "
         "for nothing");
  return p;
}

// ---- the candidate built --------------------------------------------------------------------

build::Result build_candidate(const EvalRequest& q, const std::vector<const spec::ProblemSpec*>& problems,
                              const launch::Placement& p) {
  if (!rank::is_reference_solution(q.solution)) return build_for(q.root, q.solution, q.tk_dir, p);
  {
    // Nothing to build; its identity is every problem's reference source and spec.
    build::Result b;
    b.ok = b.cached = true;
    b.library = rank::kReferenceSolution;
    std::string all;
    for (auto* s : problems) all += io::read_file(q.registry->reference_source(*s)) + io::read_file(s->path);
    b.source_sha256 = build::sha256_hex(all);
    return b;
  }
}

// ---- each problem's memory ------------------------------------------------------------------

// MemAvailable of /proc/meminfo, in bytes (0 when unknown).
uint64_t host_memory_available() {
  std::ifstream f("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (f >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib << 10;
  return 0;
}

// The problem's memory plan on the placed devices (eval/memory_plan.hpp): against the
// smallest placed GPU's memory (the host's available memory on the CPU device).
eval::MemoryPlan plan_memory(const EvalRequest& q, const spec::ProblemSpec& s, const launch::Placement& p,
                             const std::string& dtype) {
  eval::MemoryRequest r;
  r.spec = &s;
  r.size = q.settings.size;
  r.dtype = dtype;
  r.world = p.world;
  r.ranks_per_gpu = p.device == launch::Device::cuda ? p.ranks_per_gpu : p.world;  // the CPU device: every rank on the host
  r.cuda = p.device == launch::Device::cuda;
  r.timing = q.settings.timing;
  r.nccl = p.comm == launch::Comm::nccl && p.world > 1;
  if (q.memory_limit_gib > 0) {
    r.memory = static_cast<uint64_t>(q.memory_limit_gib * double(uint64_t{1} << 30));
  } else if (r.cuda) {
    for (int g = 0; g < p.gpus; ++g) {
      uint64_t m = static_cast<uint64_t>(p.probe["devices"][g].value("memory_bytes", 0.0));
      if (m && (!r.memory || m < r.memory)) r.memory = m;
    }
  } else {
    r.memory = host_memory_available();
  }
  r.iters = q.settings.iters;
  r.min_captures = kMinCaptures;
  double mib = q.capture_mib > 0 ? q.capture_mib : r.cuda ? 8192.0 / p.ranks_per_gpu : 256.0;
  r.capture_budget = static_cast<uint64_t>(mib * (1 << 20));
  r.candidate_heap = static_cast<uint64_t>(q.heap_mib * (1 << 20));
  return eval::plan_memory(r);
}

// What the parent knows of one problem before the ranks start.
struct ProblemRun {
  const spec::ProblemSpec* spec = nullptr;
  std::string dtype;
  eval::Context ctx;
  eval::MemoryPlan plan;
  eval::Record record;
};

// The evaluation's record before anything ran: the problem, the run as placed, versions.
eval::Record new_eval_record(const EvalRequest& q, const spec::ProblemSpec& s, const launch::Placement& p,
                             const spec::HardwareProfile* hw, const std::string& dtype, bool mps, uint64_t seed) {
  const rank::EvalSettings& job = q.settings;
  eval::Record r;
  r.problem = s.slug;
  r.problem_id = s.id;
  r.category = s.category;
  r.time = utc_now();
  eval::RunInfo& run = r.run;
  run.world = p.world;
  run.device = launch::name(p.device);
  run.gpu = p.gpu_name;
  run.gpus = p.gpus;
  run.ranks_per_gpu = p.ranks_per_gpu;
  run.comm = launch::name(p.comm);
  run.hardware_profile = hw ? hw->name : "";
  run.size = job.size;
  run.dtype = dtype;
  run.seed = std::to_string(seed);
  run.trials = job.trials;
  run.warmup = job.warmup;
  run.iters = job.iters;
  run.cache = job.cache;
  run.sandbox = q.ranks.sandbox;
  run.mps = mps;
  run.cpus = p.cpus.to_json();
  run.budgets_s = {{"warmup", job.warmup_budget_s}, {"timing", job.timing_budget_s}, {"trials", job.trials_budget_s}};
  run.settings = rank::to_json(job);
  r.versions = {{"pkb", PKB_VERSION}, {"commit", PKB_COMMIT}, {"torch", build::kBuiltWith.torch_version},
                {"cuda_runtime", p.probe.value("runtime_version", 0)},
                {"cuda_driver", p.probe.value("driver_version", 0)}, {"nccl", p.probe.value("nccl_version", 0)}};
  return r;
}

// Trials that will take minutes on this device, said before they start: the spec's roofline
// bound over what references typically reach of it here (the hardware profile's
// typical_fraction), for the judge's reference and the candidate in every trial.
void say_if_long(const EvalRequest& q, const spec::ProblemSpec& s, const launch::Placement& p,
                 const spec::HardwareProfile* hw, const std::string& dtype, const Say& warn) {
  if (!hw) return;
  double call_s = eval::typical_call_s(s, q.settings.size, p.world, dtype, *hw), trials_s = 2 * q.settings.trials * call_s;
  if (trials_s < 60) return;
  warn(line("%s at --size %s: its %d trials will take about %.0f minutes on the %s device (%.2g s a call: the spec's "
            "roofline bound at hardware profile %s, of which references here reach about %.1f%%); fewer --trials or a "
            "smaller --size shorten it",
            s.slug.c_str(), q.settings.size.c_str(), q.settings.trials, trials_s / 60, launch::name(p.device), call_s,
            hw->name.c_str(), 100 * hw->typical_fraction));
}

// ---- the verdicts ---------------------------------------------------------------------------------

// Where the wall time went (bench/eval_cost.sh): the slowest candidate rank at each step.
json costs(const launch::GroupReport& rep, int world, double startup_s, double compile_s, bool timing) {
  auto entered = [&](const char* ph) {
    double t = 0;
    for (int q = world; q < 2 * world && q < static_cast<int>(rep.ranks.size()); ++q)
      t = std::max(t, rep.ranks[q].entered_s.count(ph) ? rep.ranks[q].entered_s.at(ph) : 0.0);
    return t;
  };
  // From one phase's start to the next's; a phase never reached costs nothing, and one the
  // evaluation ended in (a verdict in trial 0, say) runs to the group's end.
  auto span = [&](double from, double to) { return from > 0 ? std::max(0.0, (to > 0 ? to : rep.wall_s) - from) : 0.0; };
  double init = entered(phase::kInit), trial = entered(phase::kTrial), timing_setup = entered(phase::kTimingSetup);
  double baseline = entered(phase::kReferenceWarmup);
  return {{"startup", startup_s},
          {"compile", compile_s},
          {"bootstrap", init},
          {"init", span(init, baseline > 0 ? baseline : trial)},
          {"baseline", span(baseline, trial)},  // the reference alone, then the candidate's load and pkb_init
          {"trials", span(trial, timing && timing_setup > 0 ? timing_setup : entered(phase::kFinish))},
          {"timing", timing ? span(timing_setup, entered(phase::kFinish)) : 0.0},
          {"ranks_total", rep.wall_s}};
}

// Each rank's report of problem `k` of `n`: its result whole, or its entry in "problems",
// or (a rank that died in a later problem) the part it sent as this one ended; "" for none.
std::vector<std::string> results_of(const launch::GroupReport& rep, size_t k, size_t n) {
  std::vector<std::string> out;
  for (auto& rk : rep.ranks) {
    if (n == 1) {
      out.push_back(rk.result);
      continue;
    }
    json all = json::parse(rk.result, nullptr, false);
    const json& problems = all.is_object() ? all.value("problems", json()) : json();
    out.push_back(problems.is_array() && k < problems.size() ? problems[k].dump()
                  : k < rk.parts.size()                     ? rk.parts[k]
                                                            : "");
  }
  return out;
}

}  // namespace

// A candidate runs on one device only: a .cu file on the CUDA device, a .cpp file on the
// CPU device. A mismatch is the command line's mistake, told before anything is built.
void check_candidate_device(const std::string& solution, launch::Device device, bool device_given) {
  build::Backend kind = build::backend_of(solution);
  if ((kind == build::Backend::cuda || kind == build::Backend::tk) && device == launch::Device::cpu)
    throw io::InputError(solution + " is a CUDA candidate (.cu), but this run uses the CPU device" +
                         (device_given ? " (--device cpu)" : " (no GPU is visible)") +
                         "; CPU-device candidates are .cpp files (see solutions_cpu/)");
  if (kind == build::Backend::cpu && device == launch::Device::cuda)
    throw io::InputError(solution + " is a CPU-device candidate (.cpp), but this run uses the CUDA device; add --device "
                                    "cpu, or give a .cu candidate");
}

build::Result build_for(const std::string& root, const std::string& solution, const std::string& tk_dir,
                        const launch::Placement& p) {
  build::Request req;
  req.source = solution;
  req.tk_dir = tk_dir;
  req.device = p.device;
  if (p.gpus > 0) {
    auto cc = p.probe["devices"][0]["cc"];
    req.arch = build::arch_for(cc[0], cc[1]);
  }
  return build::build(req, build::Toolchain::from_build(root));
}

EvalRun evaluate(const EvalRequest& q, const Say& say, const Say& warn) {
  EvalRun out;
  const bool reference = rank::is_reference_solution(q.solution);
  if (q.problems.empty()) throw io::InputError("no problem to evaluate");
  if (q.problems.size() > 1 && !reference)
    throw io::InputError("a candidate file answers one problem; only --solution @reference evaluates several in turn");

  // The run placed, its seed and hardware profile.
  rank::Job job;
  static_cast<rank::EvalSettings&>(job) = q.settings;
  job.mode = "eval";
  launch::Placement p = place_run(q, warn);
  if (!reference) check_candidate_device(q.solution, p.device, q.place.device != "auto");
  std::vector<const spec::ProblemSpec*> problems = q.problems;
  if (problems.size() > 1) {
    // Several problems on one start of the ranks: a category or 'all' leaves out what the
    // world size does not fit, with a line; problems named alone must all fit.
    WorldFit f = fit_world(problems, p.world, q.settings.size);
    if (!f.unfit.empty() && !q.skip_unfit)
      throw io::InputError("W=" + std::to_string(p.world) + " does not fit " + f.unfit.front().first->slug + " (" +
                           f.unfit.front().second + "); leave it out or pick another --world-size");
    for (auto& [s, why] : f.unfit) say(line("%-44s skipped: %s", s->slug.c_str(), why.c_str()));
    if (f.fit.empty()) throw io::InputError("W=" + std::to_string(p.world) + " fits none of them; pick another --world-size");
    problems = f.fit;
  }
  job.seed = make_seed(q.seed);
  std::vector<spec::HardwareProfile> profiles;
  const spec::HardwareProfile* hw = hardware_for(q.root + "/hardware/profiles.toml", q.hardware, p, profiles);
  const bool several = problems.size() > 1;
  std::string what = several ? std::to_string(problems.size()) + " problems" : problems.front()->slug;
  say(line("pkb eval %s  W=%d  device=%s%s  comm=%s  size=%s  seed=%llu  trials=%d", what.c_str(), p.world,
                 launch::name(p.device), p.gpu_name.empty() ? "" : (" (" + p.gpu_name + ")").c_str(),
                 launch::name(p.comm), job.size.c_str(), static_cast<unsigned long long>(job.seed), job.trials));

  // Each problem's memory, planned before any rank starts.
  std::vector<ProblemRun> runs;
  for (auto* s : problems) {
    ProblemRun r;
    r.spec = s;
    r.dtype = job.dtype.empty() ? s->dtype : job.dtype;
    r.ctx = eval::Context{s, job.size, r.dtype, p.device, p.world, p.ranks_per_gpu, q.settings.timing, hw};
    r.ctx.mps = p.mps != nullptr;
    r.ctx.interval_target = job.interval_target;
    r.ctx.reference_drift = job.reference_drift;
    r.ctx.machine_drift = job.machine_drift;
    r.plan = plan_memory(q, *s, p, r.dtype);
    r.record = new_eval_record(q, *s, p, hw, r.dtype, p.mps != nullptr, job.seed);
    if (!q.dry_plan) say_if_long(q, *s, p, hw, r.dtype, warn);
    runs.push_back(std::move(r));
  }
  if (q.dry_plan) {
    for (auto& r : runs) out.plan += (several ? r.spec->slug + "\n" : "") + r.plan.table();
    bool fits = true;
    for (auto& r : runs) fits = fits && r.plan.fits;
    out.exit_code = fits ? eval::kOk : eval::kUsage;
    return out;
  }
  job.specs.clear();
  job.eval_problems.clear();
  for (auto& r : runs) {
    if (!r.plan.fits) throw io::InputError(r.plan.refusal);
    for (auto& n : r.plan.notes) warn((several ? r.spec->slug + ": " : "") + n);
    job.specs.push_back(r.spec->path);
    rank::Job::EvalProblem e;
    e.captures = r.plan.captures;
    e.candidate_heap_bytes = r.plan.candidate_heap;
    e.judge_paces = r.plan.judge_paces;
    job.eval_problems.push_back(e);
    r.record.run.memory_plan = {{"per_device_bytes", r.plan.per_gpu}, {"device_bytes", r.plan.memory},
                                      {"candidate_rank_bytes", r.plan.candidate_rank},
                                      {"judge_rank_bytes", r.plan.judge_rank}, {"reference_peak", r.plan.reference_source}};
  }
  job.save_by_problem = several;

  // The candidate, compiled (or from the cache); the reference as the candidate is pkb's own.
  auto t0 = Clock::now();
  build::Result b = build_candidate(q, problems, p);
  for (auto& r : runs) {
    r.record.candidate = {q.solution, reference ? q.solution : fs::absolute(q.solution).lexically_normal().string(),
                          b.source_sha256, reference ? "reference" : build::name(b.backend)};
    r.record.versions["compiler"] = b.compiler;
    r.record.build_s = b.seconds;
  }
  auto finished = [&](int code) {
    for (auto& r : runs) {
      r.record.wall_s = seconds_since(t0);
      out.records.push_back(r.record);
    }
    out.exit_code = code;
    return out;
  };
  if (!b.ok) {
    for (auto& r : runs) {
      r.record.set_verdict(eval::Verdict::compile_error, b.error);
      r.record.failure = eval::Failure::of(eval::Verdict::compile_error, "build", "compile", b.log);
    }
    out.details = b.log;  // the compiler's output
    return finished(eval::kCompileError);
  }
  if (reference)
    say(line("candidate %s (the reference as a candidate: a sanity run of pkb, not a result; sha256 %.12s)",
                   q.solution.c_str(), b.source_sha256.c_str()));
  else
    say(line("candidate %s (%s, sha256 %.12s, %s)", q.solution.c_str(), build::name(b.backend),
                   b.source_sha256.c_str(), b.cached ? "cached build" : line("built in %.1f s", b.seconds).c_str()));
  job.library = b.library;
  // Triton's kernel cache: one folder per candidate source, which no other candidate sees;
  // with --seed (inputs that repeat) the scratch folder's, gone with the run (docs/architecture.md).
  if ((b.backend == build::Backend::triton || b.backend == build::Backend::original) && q.seed.empty() && !reference)
    p.env.push_back({"TRITON_CACHE_DIR", build::default_cache_dir() + "/triton/" + b.source_sha256});
  if (!q.save.empty()) {
    job.save_dir = fs::absolute(q.save).string();
    std::error_code ec;
    fs::create_directories(job.save_dir, ec);
    if (ec) throw io::InputError("cannot make --save-outputs " + q.save + ": " + ec.message());
  }

  // The ranks: judges, then candidate ranks beside them, every problem in turn.
  auto t_launch = Clock::now();
  std::vector<const spec::ProblemSpec*> ran;
  for (auto& r : runs) ran.push_back(r.spec);
  const launch::GroupReport rep =
      run_ranks(p, q.ranks, job, slowest_of(ran), "eval " + what + " W=" + std::to_string(p.world), /*judged=*/true);
  const bool interrupted = rep.outcome == launch::Outcome::Interrupted;
  if (!rep.fork_server_failed.empty()) warn(rep.fork_server_failed + "; each rank was exec'd instead");
  if (!interrupted && rep.outcome != launch::Outcome::Ok) out.details = rep.details();

  // The verdicts, and the records. Interrupted,
  // the problems every rank had finished keep theirs (the ranks take them in turn), and
  // the first one not finished ends the list.
  int first_bad = eval::kOk;
  for (size_t k = 0; k < runs.size(); ++k) {
    ProblemRun& r = runs[k];
    std::vector<std::string> results = several ? results_of(rep, k, runs.size()) : std::vector<std::string>{};
    if (interrupted && (!several || results.empty() ||
                        std::any_of(results.begin(), results.end(), [](auto& x) { return x.empty(); }))) {
      runs.erase(runs.begin() + static_cast<std::ptrdiff_t>(k), runs.end());
      out.interrupted = true;
      return finished(eval::kInterrupted);
    }
    launch::GroupReport mine = several ? launch::for_problem(rep, r.spec->slug, results) : rep;
    eval::judge(r.record, mine, r.ctx);
    r.record.costs_s = costs(mine, p.world, std::chrono::duration<double>(t_launch - q.started).count() - b.seconds,
                                b.seconds, job.timing);
    r.record.run.leftovers_ended = rep.leftovers_ended;
    r.record.run.ranks_started = rep.forked ? "forked" : "exec";
    r.record.run.fork_server_failed = rep.fork_server_failed;
    int code = r.record.verdict ? eval::verdict_exit_code(*r.record.verdict) : eval::kInternal;
    if (first_bad == eval::kOk) first_bad = code;
  }
  return finished(first_bad);
}

}  // namespace pkb::run
