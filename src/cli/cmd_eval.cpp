// pkb eval: a verdict a researcher can publish. pkb build: compile a candidate into the
// cache. The ranks do the work (jobs/eval.cpp); this side builds the candidate, places and
// watches the ranks, and has their reports judged (eval/verdict.hpp) into a verdict,
// timing statistics, speedup, bus bandwidth and roofline fraction. With --launcher slurm
// the same command runs as a Slurm job on a GPU node and its result comes back here.
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "build/builder.hpp"
#include "build/sha256.hpp"
#include "cli/commands.hpp"
#include "eval/layout.hpp"
#include "eval/memory_plan.hpp"
#include "eval/record.hpp"
#include "eval/verdict.hpp"
#include "io/files.hpp"
#include "launch/phases.hpp"
#include "launch/subprocess.hpp"
#include "pkb_commit.h"
#include "spec/dtype.hpp"
#include "spec/hardware.hpp"
#include "sweep/slurm.hpp"
#include "io/text.hpp"

namespace pkb::cli {

namespace fs = std::filesystem;
using json = nlohmann::json;
namespace phase = launch::phase;

namespace {

constexpr int kMinCaptures = 20;  // timed calls checked at least, where memory is short

// The command's flags. Trials, timing and budgets bind straight to the rank's job
// (rank/job.hpp), whose defaults they keep.
struct EvalOptions {
  std::string problem, solution, seed, json_out, save, hardware = "auto", tk_dir;
  std::string launcher = "local", slurm_dir;  // --launcher slurm: where the job's script, log and result go
  std::vector<std::string> sbatch;
  bool no_timing = false, no_ref_cache = false, dry_plan = false;
  double heap_mib = 0, capture_mib = 0, memory_limit_gib = 0;
  rank::Job job;
  RunOptions run;
};

std::string fmt_us(double us) { return io::format("%.1f", us); }

std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, format, std::gmtime(&t));
  return buf;
}

// A candidate runs on one device only: a .cu file on the CUDA device, a .cpp file on the
// CPU device. A mismatch is the command line's mistake, told before anything is built.
void check_candidate_device(const std::string& solution, launch::Device device, bool device_given) {
  build::Backend kind = build::backend_of(solution);
  if ((kind == build::Backend::cuda || kind == build::Backend::tk) && device == launch::Device::cpu)
    throw UsageError(solution + " is a CUDA candidate (.cu), but this run uses the CPU device" +
                     (device_given ? " (--device cpu)" : " (no GPU is visible)") +
                     "; CPU-device candidates are .cpp files (see solutions_cpu/)");
  if (kind == build::Backend::cpu && device == launch::Device::cuda)
    throw UsageError(solution + " is a CPU-device candidate (.cpp), but this run uses the CUDA device; add --device "
                                "cpu, or give a .cu candidate");
}

build::Result build_for(Globals& g, const std::string& solution, const launch::Placement& p,
                        const std::string& tk_dir) {
  build::Request req;
  req.source = solution;
  req.tk_dir = tk_dir;
  req.device = p.device;
  if (p.gpus > 0) {
    auto cc = p.probe["devices"][0]["cc"];
    req.arch = build::arch_for(cc[0], cc[1]);
  }
  return build::build(req, build::Toolchain::from_build(g.root));
}

// -s names a file. The original ParallelKernelBench took a backend name there (-s triton),
// with the files in solutions_<backend>/: point to the file pkb wants.
void check_solution_is_a_file(Globals& g, const std::string& problem, const std::string& solution) {
  struct Backend {
    const char* name;
    const char* folder;
    const char* ext;
  };
  static const Backend kBackends[] = {{"cuda", "solutions_cuda", ".cu"},         {"triton", "solutions_triton", ".py"},
                                      {"tk", "solutions_tk", ".cu"},             {"parallelkittens", "solutions_tk", ".cu"},
                                      {"thunderkittens", "solutions_tk", ".cu"}, {"cpu", "solutions_cpu", ".cpp"}};
  if (fs::exists(solution) || rank::is_reference_solution(solution)) return;
  if (solution == "reference")
    throw UsageError("-s reference: pkb eval always runs the reference beside the candidate; `-s @reference` runs "
                     "the reference as the candidate too (a sanity run of pkb), `pkb dryrun -p " +
                     problem + "` runs the reference alone");
  for (auto& b : kBackends) {
    if (solution != b.name) continue;
    std::string slug = problem;
    try {
      slug = g.problem(problem).slug;
    } catch (const std::exception&) {  // an unknown problem is told later, with its own hint
    }
    fs::path example = fs::path(g.root) / b.folder / (slug + b.ext);
    // Relative to here when it is under here ("solutions_triton/x.py"), else absolute.
    std::error_code ec;
    fs::path rel = fs::absolute(example, ec).lexically_normal().lexically_relative(fs::current_path(ec));
    std::string shown = !fs::exists(example) ? ""
                        : rel.empty() || *rel.begin() == ".." ? fs::absolute(example, ec).lexically_normal().string()
                                                              : rel.string();
    throw UsageError("-s takes a candidate file, not a backend name ('" + solution + "'); " +
                     (shown.empty() ? std::string("give the file's path (") + b.folder + "/ holds pkb's examples)"
                                    : "e.g. -s " + shown) +
                     "; `pkb sweep --solutions " + b.folder + "` evaluates a folder");
  }
}

// --solution @reference: nothing to build; its identity is the reference's source and the
// spec it implements (what a sweep's resume key and a report's matching go by).
build::Result reference_as_build(Globals& g, const spec::ProblemSpec& s) {
  build::Result b;
  b.ok = b.cached = true;
  b.library = rank::kReferenceSolution;
  b.source_sha256 = build::sha256_hex(io::read_file(g.registry().reference_source(s)) + io::read_file(s.path));
  return b;
}

// Reference timings depend on the problem, its reference, sizes, W, the machine and the
// timing settings, not on the candidate or the seed: the judges time the reference over
// up to `iters` calls, each on fresh inputs drawn from the run's seed, so the statistics
// describe the reference's speed over the problem's input distribution, whatever the
// seed (docs/results.md). A sweep times each reference once.
std::string reference_timing_key(Globals& g, const spec::ProblemSpec& s, const rank::Job& j,
                                 const launch::Placement& p, const std::string& dtype) {
  std::ostringstream k;
  k << "v3|" << PKB_VERSION << "|" << io::read_file(s.path) << "|" << io::read_file(g.registry().reference_source(s))
    << "|" << j.size << "|" << dtype << "|" << p.world << "|" << p.ranks_per_gpu << "|" << launch::name(p.device) << "|"
    << p.gpu_name << "|" << j.warmup << "|" << j.iters << "|" << j.min_iters << "|" << j.warmup_budget_s << "|"
    << j.timing_budget_s << "|" << j.cache << "|" << (p.mps ? "mps" : "");
  return build::sha256_hex(k.str()).substr(0, 32);
}

void print_table(const json& r) {
  printf("verdict: %s", r["verdict"].get<std::string>().c_str());
  if (!r["message"].get<std::string>().empty()) printf(" — %s", r["message"].get<std::string>().c_str());
  printf("\n");
  if (r["timing"].is_null()) return;
  printf("%-10s %10s %10s %10s %10s %10s\n", "time (us)", "median", "mean", "min", "max", "IQR");
  for (auto side : {"reference", "candidate"}) {
    const json& t = r["timing"][side];
    if (t.is_null()) continue;
    printf("%-10s %10s %10s %10s %10s %10s\n", side, fmt_us(t["median_us"]).c_str(), fmt_us(t["mean_us"]).c_str(),
           fmt_us(t["min_us"]).c_str(), fmt_us(t["max_us"]).c_str(), fmt_us(t["iqr_us"]).c_str());
  }
  if (!r["speedup"].is_null()) {
    printf("speedup %.2fx", r["speedup"].get<double>());
    const json& ci = r.value("speedup_interval", json());
    if (ci.is_object())
      printf(" [%.2f-%.2f, %.0f%%]", ci["lo"].get<double>(), ci["hi"].get<double>(), 100 * ci["level"].get<double>());
  }
  if (!r["busbw_gbps"].is_null())
    printf("   bus bandwidth: reference %.1f GB/s, candidate %.1f GB/s", r["busbw_gbps"]["reference"].get<double>(),
           r["busbw_gbps"]["candidate"].get<double>());
  if (!r["roofline"].is_null())
    printf("   roofline: %.0f%% of the %s bound (%s us, %s)", 100 * r["roofline"]["fraction"].get<double>(),
           r["run"]["hardware_profile"].get<std::string>().c_str(), fmt_us(r["roofline"]["bound_us"]).c_str(),
           r["roofline"]["limiter"].get<std::string>().c_str());
  printf("\n");
  // The calls each side made, where the time budgets cut the settings' counts.
  const json& counts = r["run"].value("counts", json());
  if (counts.is_object()) {
    const json &c = counts["candidate"], &f = counts["reference"];
    printf("calls: candidate %d warm-up + %d timed (%d checked), reference %d + %d%s\n", c.value("warmup", 0),
           c.value("iters", 0), c.value("captured", 0), f.value("warmup", 0), f.value("iters", 0),
           r["timing"].value("reference_cached", false) ? " (cached)" : "");
  }
  if (!r["flags"].empty()) {
    std::string f;
    for (auto& x : r["flags"]) f += (f.empty() ? "" : ", ") + x.get<std::string>();
    printf("flags: %s\n", f.c_str());
  }
  if (!eval::timing_counts(r))
    printf("note: %s timings say nothing about speed; reports count this run as correct, never as fast\n",
           r["run"].value("device", "") != "cuda" ? "CPU-device" : "these");
}

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
  return {{"startup", startup_s},
          {"compile", compile_s},
          {"reference_timing", span(entered(phase::kAwaitReference), init)},
          {"bootstrap", init},
          {"init", span(init, trial)},
          {"trials", span(trial, timing && timing_setup > 0 ? timing_setup : entered(phase::kFinish))},
          {"timing", timing ? span(timing_setup, entered(phase::kFinish)) : 0.0},
          {"ranks_total", rep.wall_s}};
}

// The evaluation's record before anything ran: the problem, the run as placed, versions.
json new_eval_record(const spec::ProblemSpec& s, const rank::Job& job, const launch::Placement& p,
                     const spec::HardwareProfile* hw, const std::string& dtype, bool sandbox) {
  eval::RecordHead head;
  head.problem = s.slug;
  head.problem_id = s.id;
  head.category = s.category;
  head.run = {{"world", p.world}, {"device", launch::name(p.device)}, {"gpu", p.gpu_name}, {"gpus", p.gpus},
              {"ranks_per_gpu", p.ranks_per_gpu}, {"comm", launch::name(p.comm)}, {"hardware_profile", hw ? hw->name : ""},
              {"size", job.size}, {"dtype", dtype}, {"seed", std::to_string(job.seed)}, {"trials", job.trials},
              {"warmup", job.warmup}, {"iters", job.iters}, {"cache", job.cache}, {"sandbox", sandbox},
              {"budgets_s", {{"warmup", job.warmup_budget_s}, {"timing", job.timing_budget_s},
                             {"trials", job.trials_budget_s}}}};
  json res = eval::new_record(head);
  res["time"] = utc_now("%Y-%m-%dT%H:%M:%SZ");
  res["versions"] = {{"pkb", PKB_VERSION}, {"commit", PKB_COMMIT}, {"torch", PKB_TORCH_VERSION},
                     {"cuda_runtime", p.probe.value("runtime_version", 0)},
                     {"cuda_driver", p.probe.value("driver_version", 0)}, {"nccl", p.probe.value("nccl_version", 0)}};
  return res;
}

// The reference's timing from an earlier evaluation of this problem (same sizes, ranks,
// machine and timing settings), or null.
json cached_reference(const std::string& file) {
  if (!fs::exists(file)) return nullptr;
  json j = json::parse(io::read_file(file), nullptr, false);
  return j.is_object() && j.contains("stats") && j.contains("counts") ? j : json();
}

// The evaluation's memory plan (eval/memory_plan.hpp) on the placed devices.
eval::MemoryPlan plan_eval_memory(const spec::ProblemSpec& s, const rank::Job& job, const launch::Placement& p,
                                  const std::string& dtype, const EvalOptions& o, const json& cached) {
  PlanInputs in = plan_inputs(p, o.memory_limit_gib, cached);
  eval::MemoryRequest r;
  r.spec = &s;
  r.size = job.size;
  r.dtype = dtype;
  r.world = p.world;
  r.ranks_per_gpu = p.device == launch::Device::cuda ? p.ranks_per_gpu : p.world;  // the CPU device: every rank on the host
  r.cuda = p.device == launch::Device::cuda;
  r.timing = job.timing;
  r.nccl = p.comm == launch::Comm::nccl && p.world > 1;
  r.memory = in.memory;
  r.iters = job.iters;
  r.min_captures = kMinCaptures;
  double mib = o.capture_mib > 0 ? o.capture_mib : p.device == launch::Device::cuda ? 8192.0 / p.ranks_per_gpu : 256.0;
  r.capture_budget = static_cast<uint64_t>(mib * (1 << 20));
  r.candidate_heap = static_cast<uint64_t>(o.heap_mib * (1 << 20));
  r.reference_peak = in.reference_peak;
  if (in.reference_peak) r.reference_peak_source = "measured";
  return eval::plan_memory(r);
}

// An evaluation, phase by phase: the problem and the run placed, the candidate built,
// the reference's timing looked up, the ranks run (judges time the reference unless it is
// cached, then the candidate ranks start), the verdict, the record.
int evaluate(Globals& g, EvalOptions& o) {
  // The problem, its sizes, the run placed.
  rank::Job& job = o.job;
  job.mode = "eval";
  job.timing = !o.no_timing;
  const spec::ProblemSpec& s = g.problem(o.problem);
  check_size(s, job.size);
  if (!job.dtype.empty() && !spec::is_dtype_name(job.dtype))
    throw UsageError("unknown --dtype '" + job.dtype + "'; use one of " + spec::dtype_names());
  const bool reference = rank::is_reference_solution(o.solution);
  if (!reference && !fs::is_regular_file(o.solution)) throw UsageError("no such candidate file: " + o.solution);
  std::string dtype = job.dtype.empty() ? s.dtype : job.dtype;
  launch::Placement p = place(o.run, &s, job.size);
  if (!reference) check_candidate_device(o.solution, p.device, o.run.place.device != "auto");
  job.specs = {s.path};
  job.seed = make_seed(o.seed);
  std::vector<spec::HardwareProfile> profiles;
  const spec::HardwareProfile* hw = hardware_for(g, o.hardware, p, profiles);
  json res = new_eval_record(s, job, p, hw, dtype, !o.run.no_sandbox);
  printf("pkb eval %s  W=%d  device=%s%s  comm=%s  size=%s  seed=%llu  trials=%d\n", s.slug.c_str(), p.world,
         launch::name(p.device), p.gpu_name.empty() ? "" : (" (" + p.gpu_name + ")").c_str(), launch::name(p.comm),
         job.size.c_str(), static_cast<unsigned long long>(job.seed), job.trials);
  if (o.run.no_sandbox) warn("--no-sandbox: the candidate runs with your environment, files and network");
  fflush(stdout);

  // The reference's timing: cached from an earlier evaluation, or timed by the judges first.
  std::string cache_file =
      build::default_cache_dir() + "/reference-timing/" + reference_timing_key(g, s, job, p, dtype) + ".json";
  eval::Context ctx{&s, job.size, dtype, p.device, p.world, p.ranks_per_gpu, job.timing, hw, nullptr};
  if (job.timing && !o.no_ref_cache) ctx.cached_reference = cached_reference(cache_file);
  job.time_reference = ctx.cached_reference.is_null();

  // The memory each GPU needs, planned before any rank starts: pkb's own buffers sized to
  // fit, or one line saying why the problem cannot.
  eval::MemoryPlan plan = plan_eval_memory(s, job, p, dtype, o, cached_reference(cache_file));
  if (o.dry_plan) {
    printf("%s", plan.table().c_str());
    return plan.fits ? int(eval::kOk) : int(eval::kUsage);
  }
  if (!plan.fits) throw UsageError(plan.refusal);
  for (auto& n : plan.notes) warn(n);
  job.captures = plan.captures;
  job.candidate_heap_bytes = plan.candidate_heap;
  res["run"]["memory_plan"] = {{"per_device_bytes", plan.per_gpu}, {"device_bytes", plan.memory},
                               {"candidate_rank_bytes", plan.candidate_rank}, {"judge_rank_bytes", plan.judge_rank},
                               {"reference_peak", plan.reference_source}};

  // The candidate, compiled (or from the cache); the reference as the candidate is pkb's own.
  auto t0 = std::chrono::steady_clock::now();
  build::Result b = reference ? reference_as_build(g, s) : build_for(g, o.solution, p, o.tk_dir);
  res["candidate"] = {{"path", o.solution},
                      {"abs_path", reference ? o.solution : fs::absolute(o.solution).lexically_normal().string()},
                      {"sha256", b.source_sha256},
                      {"backend", reference ? "reference" : build::name(b.backend)}};
  res["versions"]["compiler"] = b.compiler;
  res["build_s"] = b.seconds;
  auto finish = [&](int code) {
    res["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!o.json_out.empty()) {
      std::ofstream f(o.json_out);
      f << res.dump(2) << "\n";
      if (!f) throw std::runtime_error("cannot write " + o.json_out);
    }
    return code;
  };
  if (!b.ok) {
    res["verdict"] = "compile_error";
    res["message"] = b.error;
    res["failure"] = {{"reason", "compile"}, {"detail", b.log}};
    printf("verdict: compile_error — %s\n", b.error.c_str());
    if (!b.log.empty()) fprintf(stderr, "%s", b.log.c_str());
    return finish(eval::kCompileError);
  }
  if (reference)
    printf("candidate %s (the reference as a candidate: a sanity run of pkb, sha256 %.12s)\n", o.solution.c_str(),
           b.source_sha256.c_str());
  else
    printf("candidate %s (%s, sha256 %.12s, %s)\n", o.solution.c_str(), build::name(b.backend),
           b.source_sha256.c_str(), b.cached ? "cached build" : ("built in " + fmt_us(b.seconds) + " s").c_str());

  job.library = b.library;
  // Triton's kernel cache: one folder per candidate source, which no other candidate sees;
  // with --seed (inputs that repeat) the scratch folder's, gone with the run (docs/architecture.md).
  if (b.backend == build::Backend::triton && o.seed.empty())
    p.env.push_back({"TRITON_CACHE_DIR", build::default_cache_dir() + "/triton/" + b.source_sha256});
  if (!o.save.empty()) {
    job.save_dir = fs::absolute(o.save).string();
    std::error_code ec;
    fs::create_directories(job.save_dir, ec);
    if (ec) throw UsageError("cannot make --save-outputs " + o.save + ": " + ec.message());
  }

  // The ranks: judges, then candidate ranks beside them.
  auto t_launch = std::chrono::steady_clock::now();
  launch::GroupReport rep =
      run_ranks(g, p, o.run, job, &s, "eval " + s.slug + " W=" + std::to_string(p.world), /*judged=*/true);
  if (rep.outcome == launch::Outcome::Interrupted) {
    fprintf(stderr, "pkb: interrupted; no result\n");
    return eval::kInterrupted;
  }

  // The verdict, and the record.
  json to_cache = eval::judge(res, rep, ctx);
  res["costs_s"] = costs(rep, p.world, std::chrono::duration<double>(t_launch - process_start()).count() - b.seconds,
                         b.seconds, job.timing);
  res["run"]["leftovers_ended"] = rep.leftovers_ended;
  if (rep.outcome != launch::Outcome::Ok && res["verdict"] != "compile_error") fprintf(stderr, "%s", rep.details().c_str());
  if (!to_cache.is_null()) io::write_file_atomically(cache_file, to_cache.dump() + "\n");
  print_table(res);
  return finish(eval::verdict_exit_code(res["verdict"].get<std::string>()));
}

// The command line this process was started with, as the kernel has it.
std::vector<std::string> own_argv() {
  std::string raw = io::read_file("/proc/self/cmdline");
  std::vector<std::string> argv;
  for (size_t at = 0; at < raw.size();) {
    size_t end = raw.find('\0', at);
    if (end == std::string::npos) end = raw.size();
    argv.push_back(raw.substr(at, end - at));
    at = end + 1;
  }
  return argv;
}

// This command as the node runs it: every flag kept but the launcher's own, the device
// settled, the result written into the job's folder.
std::vector<std::string> node_argv(const std::string& device, const std::string& result) {
  const std::vector<std::string> dropped = {"--launcher", "--sbatch", "--slurm-dir", "--json", "--device"};
  std::vector<std::string> argv = own_argv(), out = {launch::self_exe()};
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    bool drop = false;
    for (auto& d : dropped) {
      if (a == d) {
        drop = true;
        ++i;  // and its value
      } else if (a.rfind(d + "=", 0) == 0) {
        drop = true;
      }
    }
    if (!drop) out.push_back(a);
  }
  out.insert(out.end(), {"--device", device, "--json", result});
  return out;
}

std::string last_lines(const std::string& path, int n) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > size_t(n) ? lines.size() - n : 0; i < lines.size(); ++i) out += "  " + lines[i] + "\n";
  return out;
}

// pkb eval --launcher slurm: this command as a one-task Slurm job (the script `pkb sweep
// --launcher slurm` writes, without the array), submitted and waited for; the node writes
// the result into a folder both sides see, and it is printed (and --json written) here.
int evaluate_on_slurm(Globals& g, EvalOptions& o) {
  const spec::ProblemSpec& s = g.problem(o.problem);
  check_size(s, o.job.size);
  if (!o.job.dtype.empty() && !spec::is_dtype_name(o.job.dtype))
    throw UsageError("unknown --dtype '" + o.job.dtype + "'; use one of " + spec::dtype_names());
  if (!fs::is_regular_file(o.solution)) throw UsageError("no such candidate file: " + o.solution);
  const launch::PlaceRequest& req = o.run.place;
  // Nothing is probed here (this machine may have no GPU): the candidate's kind says the device.
  std::string device = req.device != "auto"                                   ? req.device
                       : build::backend_of(o.solution) == build::Backend::cpu ? "cpu"
                                                                              : "cuda";
  check_candidate_device(o.solution, launch::device_from_name(device), req.device != "auto");
  sweep::SlurmJob job;
  if (device == "cuda") {
    if (req.world == 0)
      throw UsageError("--launcher slurm on the CUDA device needs -w/--world-size: the GPUs to ask Slurm for");
    int per_gpu = std::max(1, req.ranks_per_gpu);
    job.gpus_per_node = (req.world + per_gpu - 1) / per_gpu;
  }
  fs::path dir = fs::absolute(o.slurm_dir.empty() ? "pkb-slurm/eval-" + s.slug + "-" + utc_now("%Y%m%d-%H%M%S")
                                                  : o.slurm_dir);
  fs::create_directories(dir);
  fs::path result = dir / "result.json";
  fs::remove(result);
  job.name = "pkb-eval";
  job.array = false;
  job.results_dir = dir.string();
  job.workdir = fs::current_path().string();
  job.sbatch_options = o.sbatch;
  job.argv = node_argv(device, result.string());
  std::string script = (dir / "eval.sbatch").string();
  std::ofstream file(script);
  file << sweep::slurm_script(job);
  file.close();
  if (!file) throw UsageError("cannot write " + script + "; pick a --slurm-dir you can write to");
  printf("pkb eval %s on Slurm: %s, waiting for the job to end (logs in %s)\n", s.slug.c_str(), script.c_str(),
         dir.c_str());
  fflush(stdout);
  sweep::Submission sub;
  try {
    sub = sweep::sbatch(script, true);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  std::string log = (dir / ("slurm-" + sub.id + ".log")).string();
  if (!fs::exists(result)) {
    fprintf(stderr, "pkb: error: %s; the job wrote no result. The end of %s:\n%s",
            sub.id.empty() ? ("sbatch refused " + script + ": " + sub.error).c_str()
                           : ("Slurm job " + sub.id + " ended" + (sub.ok ? "" : " with an error: " + sub.error)).c_str(),
            log.c_str(), last_lines(log, 12).c_str());
    return eval::kInternal;
  }
  json res = json::parse(io::read_file(result.string()), nullptr, false);
  if (res.is_discarded() || !res.value("verdict", json()).is_string()) {
    fprintf(stderr, "pkb: error: %s is not a pkb.eval/1 result\n", result.c_str());
    return eval::kInternal;
  }
  res["slurm"] = {{"job", sub.id}, {"folder", dir.string()}};
  printf("Slurm job %s on the %s device: result %s\n", sub.id.c_str(), device.c_str(), result.c_str());
  print_table(res);
  if (!o.json_out.empty()) {
    std::ofstream f(o.json_out);
    f << res.dump(2) << "\n";
    if (!f) throw std::runtime_error("cannot write " + o.json_out);
  }
  return eval::verdict_exit_code(res["verdict"].get<std::string>());
}

}  // namespace

void add_eval_commands(CLI::App& app, Globals& g, Action& run) {
  static EvalOptions o;
  rank::Job& j = o.job;
  auto* cmd = app.add_subcommand("eval", "Check a candidate against the reference on every rank, then time both");
  cmd->add_option("-p,--problem", o.problem, "slug, original id or original stem")->required();
  cmd->add_option("-s,--solution", o.solution,
                  "the candidate: .cu (CUDA, ThunderKittens), .py (Triton; torch on the CPU device) or .cpp (CPU "
                  "device); @reference: the problem's own reference as the candidate, a sanity run of pkb (it should "
                  "be correct at about 1.0x), not a result")
      ->required();
  cmd->add_option("--tk-dir", o.tk_dir, "ThunderKittens checkout for candidates that include kittens.cuh (env PKB_TK_DIR)");
  cmd->add_option("-n,--trials", j.trials, "correctness trials, each with fresh random inputs (not timed calls: --iters)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  // nccl-tests users read -w as warm-up and -n as iterations: say what they are here.
  cmd->add_option("--warmup", j.warmup, "untimed calls before timing (nccl-tests' -w; pkb's -w is --world-size)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("--iters", j.iters, "timed calls (nccl-tests' -n; pkb's -n is --trials)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_flag("--no-timing", o.no_timing, "check correctness only");
  cmd->add_option("--cache", j.cache, "cold: evict the L2 before each timed call; warm: do not")
      ->check(CLI::IsMember({"cold", "warm"}))
      ->capture_default_str();
  cmd->add_option("--size", j.size, kSizeHelp);
  cmd->add_option("--dtype", j.dtype, "element type for the problem's 'dt' tensors: bf16 (or bfloat16), fp16, fp32, ...")
      ->transform(dtype_spellings());
  cmd->add_option("--seed", o.seed, "replay a run's seed (inputs are drawn from it)");
  cmd->add_option("--json", o.json_out, "write the result (schema pkb.eval/1) here");
  cmd->add_option("--save-outputs", o.save, "write reference/, candidate/ and inputs/ rank_*.pt of the failing trial (else trial 0)");
  cmd->add_option("--hardware", o.hardware, "hardware profile for the roofline (auto: pkb doctor's pick)");
  cmd->add_option("--heap-size", o.heap_mib, "MiB of symmetric heap per rank for the candidate's own buffers (default: twice its inputs and outputs, at least 256)");
  cmd->add_flag("--dry-plan", o.dry_plan, "print the memory plan (bytes a rank, by part) and start nothing");
  cmd->add_option("--memory-limit", o.memory_limit_gib,
                  "GiB of memory a device has, for the memory plan (default: the GPU's; the host's available memory "
                  "on the CPU device)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--capture-mib", o.capture_mib,
                  "MiB per rank for the timed calls' captured outputs (default: 8192 on CUDA, 256 on CPU; at least 20 "
                  "calls are captured)");
  cmd->add_option("--warmup-budget", j.warmup_budget_s, "seconds after which warm-up stops (at least one call)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--timing-budget", j.timing_budget_s,
                  "seconds of timed calls: fewer than --iters where calls are long, never under --min-iters")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--min-iters", j.min_iters, "timed calls whatever the budget")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--trials-budget", j.trials_budget_s, "seconds after which trials stop, once --min-trials ran")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--min-trials", j.min_trials, "trials whatever the budget")->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_flag("--no-reference-cache", o.no_ref_cache, "time the reference even when a cached timing exists");
  cmd->add_option("--launcher", o.launcher, "local (here), or slurm (a Slurm job on a GPU node; waits for its result)")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_option("--sbatch", o.sbatch, "slurm: one more #SBATCH option, e.g. --sbatch=--partition=gpu (repeatable)");
  cmd->add_option("--slurm-dir", o.slurm_dir,
                  "slurm: the job's folder, seen by both sides (default pkb-slurm/eval-<problem>-<time>)");
  o.run.add_to(cmd);
  cmd->callback([&] {
    run = [&] {
      check_solution_is_a_file(g, o.problem, o.solution);
      if (o.launcher == "slurm") return evaluate_on_slurm(g, o);
      if (!o.sbatch.empty() || !o.slurm_dir.empty()) throw UsageError("--sbatch and --slurm-dir are for --launcher slurm");
      return evaluate(g, o);
    };
  });

  static std::string build_src, build_device = "auto", build_tk_dir;
  auto* bcmd = app.add_subcommand("build", "Compile a candidate into the build cache and print the library's path");
  bcmd->add_option("-s,--solution", build_src, "the candidate file")->required();
  bcmd->add_option("--device", build_device, "cuda, cpu or auto (from the file's kind)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  bcmd->add_option("--tk-dir", build_tk_dir, "ThunderKittens checkout (env PKB_TK_DIR)");
  bcmd->callback([&] {
    run = [&] {
      launch::Placement p;
      build::Backend kind = build::backend_of(build_src);
      p.device = build_device != "auto" ? launch::device_from_name(build_device)
                 : kind == build::Backend::cpu ? launch::Device::cpu
                                               : launch::Device::cuda;
      if (p.device == launch::Device::cuda && kind != build::Backend::triton) {  // the GPU's architecture
        p.probe = launch::probe_devices();
        p.gpus = static_cast<int>(p.probe.value("devices", json::array()).size());
      }
      build::Result b = build_for(g, build_src, p, build_tk_dir);
      if (!b.ok) {
        fprintf(stderr, "pkb: compile error: %s\n%s", b.error.c_str(), b.log.c_str());
        return int(eval::kCompileError);
      }
      printf("%s\n", b.library.c_str());
      return int(eval::kOk);
    };
  });
}

}  // namespace pkb::cli
