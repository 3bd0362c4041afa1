// pkb eval: a verdict a researcher can publish. Flags in, a request out: run/evaluation.hpp runs the evaluation's phases (the
// ranks do the work, jobs/), and this side prints the verdict, timing statistics,
// speedup, bus bandwidth and roofline fraction and writes the record. With --launcher
// slurm the same command runs as a Slurm job on a GPU node (sweep/slurm.hpp) and its
// result comes back here.
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <spdlog/spdlog.h>

#include "build/builder.hpp"
#include "cli/commands.hpp"
#include "cli/prompting.hpp"
#include "eval/verdict.hpp"
#include "io/files.hpp"
#include "launch/subprocess.hpp"
#include "run/evaluation.hpp"
#include "spec/dtype.hpp"
#include "spec/hardware.hpp"
#include "sweep/slurm.hpp"
#include "io/text.hpp"

namespace pkb::cli {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The command's flags. What the evaluation measures binds straight to its settings
// (rank/settings.hpp), whose defaults they keep.
struct EvalOptions {
  std::vector<std::string> problems;
  std::string solution, seed, json_out, save, hardware = "auto", tk_dir;
  std::string launcher = "local", slurm_dir;  // --launcher slurm: where the job's script, log and result go
  std::vector<std::string> sbatch;
  bool dry_plan = false;
  double heap_mib = 0, capture_mib = 0, memory_limit_gib = 0;
  rank::EvalSettings settings;
  RunOptions run;
  const std::string& problem() const { return problems.front(); }
};

std::string fmt_us(double us) { return io::format("%.1f", us); }

std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, format, std::gmtime(&t));
  return buf;
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
  // A folder of that name (the repository's reference/, in its root) is no candidate file.
  if ((fs::exists(solution) && !fs::is_directory(solution)) || rank::is_reference_solution(solution)) return;
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
  throw UsageError("no such candidate file: " + solution);
}

void print_table(const eval::Record& r) {
  printf("verdict: %s", r.verdict ? eval::verdict_name(*r.verdict) : "none");
  if (!r.message.empty()) printf(" — %s", r.message.c_str());
  printf("\n");
  if (!r.timing) return;
  const eval::TimingSummary& t = *r.timing;
  printf("%-10s %10s %10s %10s %10s %10s\n", "time (us)", "median", "mean", "min", "max", "IQR");
  for (auto [side, x] : {std::pair<const char*, const eval::Stats*>{"reference", &t.reference}, {"candidate", &t.candidate}})
    printf("%-10s %10s %10s %10s %10s %10s\n", side, fmt_us(x->median).c_str(), fmt_us(x->mean).c_str(),
           fmt_us(x->min).c_str(), fmt_us(x->max).c_str(), fmt_us(x->iqr).c_str());
  if (r.speedup) {
    printf("speedup %.2fx", *r.speedup);
    if (r.speedup_interval)
      printf(" [%.2f-%.2f, %.0f%%]", r.speedup_interval->lo, r.speedup_interval->hi, 100 * r.speedup_interval->level);
  }
  if (r.busbw_gbps)
    printf("   bus bandwidth: reference %.1f GB/s, candidate %.1f GB/s", r.busbw_gbps->reference_gbps,
           r.busbw_gbps->candidate_gbps);
  if (r.roofline)
    printf("   roofline: %.0f%% of the %s bound (%s us, %s)", 100 * r.roofline->fraction, r.run.hardware_profile.c_str(),
           fmt_us(r.roofline->bound_us).c_str(), r.roofline->limiter.c_str());
  printf("\n");
  // The calls each side made, where the time budgets cut the settings' counts, and how the
  // rounds ended.
  if (r.run.counts) {
    const eval::CallCounts& c = *r.run.counts;
    const eval::RoundsSummary rounds = t.rounds.value_or(eval::RoundsSummary{});
    printf("calls: candidate %d warm-up + %d timed (%d checked), reference %d alone + %d warm-up + %d timed beside it; "
           "%d rounds of %d, ended by %s\n",
           c.candidate_warmup, c.candidate_iters, c.captured, c.baseline, c.reference_warmup, c.reference_iters,
           rounds.count, rounds.block, rounds.stop.empty() ? "?" : rounds.stop.c_str());
  }
  if (t.machine)
    printf("machine: the reference in the judges' own processes took %s us beside the baseline, %s us beside the "
           "rounds%s\n",
           fmt_us(t.machine->baseline.median).c_str(), fmt_us(t.machine->rounds.median).c_str(),
           t.candidate_beside.empty() ? ""
                                      : (" (the bound on the reference credits " + io::format("%.3f", t.machine->credited) +
                                         "x of it)")
                                            .c_str());
  // What of the candidate the judges saw beside the reference's calls: the bound's reason.
  if (t.host_reference || !t.candidate_beside.empty())
    printf("beside the reference: %s\n", t.candidate_beside.empty() ? "nothing of the candidate seen (its threads, the device "
                                                                     "probe, the process state), so no bound on it"
                                                                   : t.candidate_beside.c_str());
  // Where both sides' timed threads ran (launch/cpus.hpp), where it can matter.
  const json& cpus = r.run.cpus;
  if (cpus.is_object() && r.run.device == "cuda") {
    auto list = [](const json& a) {
      std::string s;
      for (auto& c : a) s += (s.empty() ? "" : ",") + std::to_string(c.get<int>());
      return s;
    };
    if (cpus.value("pinned", false))
      printf("CPUs: both sides timed on %s, the rest on %s\n", list(cpus["timing"]).c_str(), list(cpus["partner"]).c_str());
    else
      printf("CPUs: not pinned (%s): the two sides may be timed on CPUs of different speeds\n",
             cpus.value("why_not", "").c_str());
  }
  if (!r.flags.empty()) {
    std::string f;
    for (auto& x : r.flags) f += (f.empty() ? "" : ", ") + x;
    printf("flags: %s\n", f.c_str());
  }
  if (!t.reference_slowed.empty()) printf("reference slowed: %s\n", t.reference_slowed.c_str());
  if (!eval::timing_counts(r))
    printf("note: %s timings say nothing about speed; reports count this run as correct, never as fast\n",
           r.run.device != "cuda" ? "CPU-device" : "these");
}

// One line a problem, for an evaluation of several (the reference as the candidate).
void print_line(const eval::Record& r) {
  std::string v = r.verdict ? eval::verdict_name(*r.verdict) : "none", speed;
  if (r.speedup) speed = io::format("%.2fx", *r.speedup);
  printf("%-44s %-20s %-7s %s\n", r.problem.c_str(), v.c_str(), speed.c_str(),
         r.correct() ? "" : r.message.substr(0, 160).c_str());
}

// The records: pretty-printed for one problem, JSON Lines for several.
void write_records(const std::string& file, const std::vector<eval::Record>& records) {
  std::ofstream f(file);
  if (records.size() == 1) f << records[0].to_json().dump(2) << "\n";
  else
    for (auto& r : records) f << r.to_json().dump() << "\n";
  if (!f) throw std::runtime_error("cannot write " + file);
}

// pkb eval: the flags as a request (run/evaluation.hpp does the evaluation's phases), then
// what came back printed and written.
int evaluate(Globals& g, EvalOptions& o) {
  run::EvalRequest q;
  q.problems = select_problems(g, o.problems);
  for (auto* s : q.problems) check_size(*s, o.settings.size);
  check_dtype(o.settings.dtype);
  q.skip_unfit = names_categories(o.problems);
  q.solution = o.solution;
  q.seed = o.seed;
  q.save = o.save;
  q.hardware = o.hardware;
  q.tk_dir = o.tk_dir;
  q.dry_plan = o.dry_plan;
  q.heap_mib = o.heap_mib;
  q.capture_mib = o.capture_mib;
  q.memory_limit_gib = o.memory_limit_gib;
  q.settings = o.settings;
  q.place = o.run.place;
  q.ranks = rank_settings(g, o.run);
  q.registry = &g.registry();
  q.root = g.root;
  q.started = process_start();
  if (o.run.no_sandbox) warn("--no-sandbox: the candidate runs with your environment, files and network");
  auto say = [](const std::string& line) {
    printf("%s\n", line.c_str());
    fflush(stdout);
  };
  run::EvalRun r = run::evaluate(q, say, [](const std::string& w) { warn(w); });
  if (q.dry_plan) {
    printf("%s", r.plan.c_str());
    return r.exit_code;
  }
  if (r.interrupted && r.records.empty()) {
    fprintf(stderr, "pkb: interrupted; no result\n");
    return r.exit_code;
  }
  if (!r.details.empty()) fprintf(stderr, "%s", r.details.c_str());
  if (!o.json_out.empty()) write_records(o.json_out, r.records);
  if (q.problems.size() == 1) {
    print_table(r.records[0]);
  } else {
    int correct = 0;
    for (auto& rec : r.records) {
      print_line(rec);
      correct += rec.correct();
    }
    printf("%zu problems: %d correct, %zu not\n", r.records.size(), correct, r.records.size() - correct);
  }
  if (r.interrupted)
    fprintf(stderr, "pkb: interrupted after %zu of %zu problems; theirs are the results above%s\n", r.records.size(),
            q.problems.size(), o.json_out.empty() ? "" : (" and in " + o.json_out).c_str());
  return r.exit_code;
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

// pkb eval --launcher slurm: this command as a one-task Slurm job (sweep/slurm.hpp), its
// result printed (and --json written) here as a local evaluation's is.
int evaluate_on_slurm(Globals& g, EvalOptions& o) {
  if (o.problems.size() != 1) throw UsageError("--launcher slurm evaluates one problem: give one -p");
  const spec::ProblemSpec& s = g.problem(o.problem());
  check_size(s, o.settings.size);
  check_dtype(o.settings.dtype);
  const bool reference = rank::is_reference_solution(o.solution);
  if (!reference && !fs::is_regular_file(o.solution)) throw UsageError("no such candidate file: " + o.solution);
  const launch::PlaceRequest& req = o.run.place;
  // Nothing is probed here (this machine may have no GPU): the candidate's kind says the device.
  std::string device = req.device != "auto"                                                 ? req.device
                       : !reference && build::backend_of(o.solution) == build::Backend::cpu ? "cpu"
                                                                                            : "cuda";
  if (!reference) run::check_candidate_device(o.solution, launch::device_from_name(device), req.device != "auto");
  sweep::SlurmEval e;
  if (device == "cuda") {
    if (req.world == 0)
      throw UsageError("--launcher slurm on the CUDA device needs -w/--world-size: the GPUs to ask Slurm for");
    int per_gpu = std::max(1, req.ranks_per_gpu);
    e.gpus = (req.world + per_gpu - 1) / per_gpu;
  }
  e.dir = fs::absolute(o.slurm_dir.empty() ? "pkb-slurm/eval-" + s.slug + "-" + utc_now("%Y%m%d-%H%M%S") : o.slurm_dir)
              .string();
  e.argv = node_argv(device, sweep::slurm_result_path(e.dir));
  e.sbatch_options = o.sbatch;
  e.on_submit = [&](const std::string& script) {
    printf("pkb eval %s on Slurm: %s, waiting for the job to end (logs in %s)\n", s.slug.c_str(), script.c_str(),
           e.dir.c_str());
    fflush(stdout);
  };
  sweep::SlurmEvalResult r;
  try {
    r = sweep::eval_on_slurm(e);
  } catch (const std::exception& x) {
    throw UsageError(x.what());
  }
  if (!r.record) {
    fprintf(stderr, "pkb: error: %s", (r.error + (r.error.back() == '\n' ? "" : "\n")).c_str());
    return eval::kInternal;
  }
  printf("Slurm job %s on the %s device: result %s\n", r.record->slurm ? r.record->slurm->job.c_str() : "?",
         device.c_str(), sweep::slurm_result_path(e.dir).c_str());
  print_table(*r.record);
  if (!o.json_out.empty()) write_records(o.json_out, {*r.record});
  return r.record->verdict ? eval::verdict_exit_code(*r.record->verdict) : eval::kInternal;
}

}  // namespace

// --candidate-format: what a .py file is taken for (build/builder.hpp, Format).
void add_eval_commands(CLI::App& app, Globals& g, Action& run) {
  static EvalOptions o;
  auto* cmd = app.add_subcommand("eval", "Check a candidate against the reference on every rank, then time both");
  cmd->add_option("-p,--problem", o.problems,
                  "slug, original id or original stem; with --solution @reference also several, a category key or all "
                  "(evaluated in turn on one start of the ranks), comma-separated or repeated")
      ->required()
      ->delimiter(',');
  cmd->add_option("-s,--solution", o.solution,
                  "the candidate: .cu (CUDA, ThunderKittens), .py (Triton; torch on the CPU device) or .cpp (CPU "
                  "device); @reference: the problem's own reference as the candidate, a sanity run of pkb (it should "
                  "be correct at about 1.0x), not a result")
      ->required();
  cmd->add_option("--tk-dir", o.tk_dir, "ThunderKittens checkout for candidates that include kittens.cuh (env PKB_TK_DIR)");
  add_format_option(cmd);
  add_settings(cmd, o.settings);
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
  cmd->add_option("--launcher", o.launcher, "local (here), or slurm (a Slurm job on a GPU node; waits for its result)")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_option("--sbatch", o.sbatch, "slurm: one more #SBATCH option, e.g. --sbatch=--partition=gpu (repeatable)");
  cmd->add_option("--slurm-dir", o.slurm_dir,
                  "slurm: the job's folder, seen by both sides (default pkb-slurm/eval-<problem>-<time>)");
  o.run.add_to(cmd);
  cmd->callback([&] {
    run = [&] {
      check_solution_is_a_file(g, o.problem(), o.solution);
      if (o.launcher == "slurm") return evaluate_on_slurm(g, o);
      if (!o.sbatch.empty() || !o.slurm_dir.empty()) throw UsageError("--sbatch and --slurm-dir are for --launcher slurm");
      return evaluate(g, o);
    };
  });

}

}  // namespace pkb::cli
