// pkb eval: a verdict a researcher can publish. pkb build: compile a candidate into the
// cache. The ranks do the work (eval/eval_job.cpp); this side builds the candidate, places
// and watches the ranks, and turns what they report into a verdict, timing statistics,
// speedup, bus bandwidth and roofline fraction.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "build/builder.hpp"
#include "build/sha256.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "eval/summary.hpp"
#include "io/files.hpp"
#include "spec/dtype.hpp"
#include "spec/hardware.hpp"

namespace pkb::cli {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct EvalOptions {
  std::string problem, solution, preset = "default", dtype, seed, json_out, save, cache = "cold", hardware = "auto";
  int trials = 100, warmup = 500, iters = 100;
  bool no_timing = false, no_ref_cache = false;
  double heap_mib = 256, sets_mib = 0;
  RunOptions run;
};

int exit_for_verdict(const std::string& v) {
  if (v == "correct") return kOk;
  if (v == "wrong") return kWrong;
  if (v == "compile_error") return kCompileError;
  if (v == "crash") return kCrash;
  if (v == "timeout") return kTimeout;
  if (v == "integrity_violation") return kIntegrity;
  return kInternal;
}

std::string fmt_us(double us) {
  char b[32];
  snprintf(b, sizeof b, "%.1f", us);
  return b;
}

build::Result build_for(Globals& g, const std::string& solution, const Placement& p) {
  build::Request req;
  req.source = solution;
  req.device = p.device;
  if (p.gpus > 0) {
    auto cc = p.probe["devices"][0]["cc"];
    req.arch = build::arch_for(cc[0], cc[1]);
  }
  return build::build(req, build::Toolchain::from_build(g.root));
}

const spec::HardwareProfile* hardware_for(Globals& g, const std::string& wanted, const Placement& p,
                                          std::vector<spec::HardwareProfile>& store) {
  store = spec::load_profiles(g.root + "/hardware/profiles.toml");
  if (wanted != "auto") {
    auto* hw = spec::find_profile(store, wanted);
    if (!hw) throw UsageError("no hardware profile '" + wanted + "' in hardware/profiles.toml");
    return hw;
  }
  return spec::pick_profile(store, p.device == "cpu" ? "cpu" : p.gpu_name, p.gpus);
}

// Reference timings depend on the problem, its reference, sizes, W, seed and machine, not
// on the candidate: a sweep times each reference once.
std::string reference_timing_key(Globals& g, const spec::ProblemSpec& s, const EvalOptions& o, const Placement& p,
                                 const std::string& dtype, uint64_t seed) {
  std::ostringstream k;
  k << PKB_VERSION << "|" << io::read_file(s.path) << "|" << io::read_file(g.registry().reference_source(s)) << "|" << o.preset
    << "|" << dtype << "|" << p.world << "|" << p.ranks_per_gpu << "|" << p.device << "|" << p.gpu_name << "|"
    << seed << "|" << o.warmup << "|" << o.iters << "|" << o.cache;
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
  if (!r["speedup"].is_null()) printf("speedup %.2fx", r["speedup"].get<double>());
  if (!r["busbw_gbps"].is_null())
    printf("   bus bandwidth: reference %.1f GB/s, candidate %.1f GB/s", r["busbw_gbps"]["reference"].get<double>(),
           r["busbw_gbps"]["candidate"].get<double>());
  if (!r["roofline"].is_null())
    printf("   roofline: %.0f%% of the %s bound (%s us, %s)", 100 * r["roofline"]["fraction"].get<double>(),
           r["run"]["hardware_profile"].get<std::string>().c_str(), fmt_us(r["roofline"]["bound_us"]).c_str(),
           r["roofline"]["limiter"].get<std::string>().c_str());
  printf("\n");
  if (!r["flags"].empty()) {
    std::string f;
    for (auto& x : r["flags"]) f += (f.empty() ? "" : ", ") + x.get<std::string>();
    printf("flags: %s\n", f.c_str());
  }
}

// Turns the ranks' reports into the result (docs/results.md).
void judge(json& res, const launch::GroupReport& rep, const spec::ProblemSpec& s, const EvalOptions& o,
           const Placement& p, const spec::HardwareProfile* hw, const std::string& dtype, json& cached_ref) {
  if (rep.outcome == launch::Outcome::Timeout) {
    res["verdict"] = "timeout";
    res["message"] = rep.summary;
    return;
  }
  if (rep.outcome == launch::Outcome::Crash) {
    for (auto& rk : rep.ranks)
      if (rk.error_kind == "abi") {
        res["verdict"] = "compile_error";
        res["message"] = rk.error_message;
        return;
      }
    res["verdict"] = "crash";
    res["message"] = rep.summary;
    return;
  }
  std::vector<json> ranks;
  for (auto& rk : rep.ranks) ranks.push_back(json::parse(rk.result));
  res["run"]["input_sets"] = ranks[0].value("input_sets", 0);
  res["phases_ms"] = ranks[0].value("phase_ms", json::object());
  json fail = ranks[0]["failure"];
  if (!fail.is_null()) {
    res["verdict"] = fail["verdict"];
    std::string tensor = fail["output"].get<std::string>();
    std::string where = "rank " + std::to_string(fail["rank"].get<int>()) +
                        (tensor.empty() ? "" : (fail["reason"] == "input_mutated" ? ", input '" : ", output '") + tensor + "'") +
                        (fail["phase"] == "trial" ? ", trial " + std::to_string(fail["trial"].get<int64_t>())
                                                  : ", during timing");
    res["message"] = where + ": " + fail["detail"].get<std::string>();
    res["failure"] = fail;
    return;
  }
  res["verdict"] = "correct";
  res["message"] = std::to_string(ranks[0]["trials_run"].get<int>()) + " trials on " + std::to_string(p.world) +
                   " ranks" + (o.no_timing ? "" : ", timed calls checked");
  if (o.no_timing) return;

  std::vector<std::vector<double>> cand, ref;
  for (auto& r : ranks) {
    cand.push_back(r["candidate_us"].get<std::vector<double>>());
    if (r.contains("reference_us")) ref.push_back(r["reference_us"].get<std::vector<double>>());
  }
  eval::Stats cs = eval::stats_of(eval::slowest_per_call(cand));
  eval::Stats rs = ref.empty() ? eval::Stats::from_json(cached_ref) : eval::stats_of(eval::slowest_per_call(ref));
  if (!ref.empty()) cached_ref = rs.to_json();
  res["timing"] = {{"reference", rs.to_json()}, {"candidate", cs.to_json()}, {"reference_cached", ref.empty()}};
  res["speedup"] = cs.median > 0 ? rs.median / cs.median : 0;
  if (!s.roofline.bus_factor.empty())
    res["busbw_gbps"] = {{"reference", eval::busbw_gbps(s, o.preset, p.world, dtype, rs.median)},
                         {"candidate", eval::busbw_gbps(s, o.preset, p.world, dtype, cs.median)}};
  json flags = json::array();
  if (hw) {
    eval::Bound b = eval::roofline_bound(s, o.preset, p.world, dtype, *hw);
    if (b.us > 0) {
      res["roofline"] = {{"bound_us", b.us}, {"fraction", b.us / cs.median}, {"limiter", b.limiter},
                         {"nvlink_us", b.nvlink_us}, {"hbm_us", b.hbm_us}, {"flops_us", b.flops_us}};
      // Below the speed of light is a measurement bug or a cheat, never a result.
      if (cs.median < 0.95 * b.us && p.ranks_per_gpu == 1) flags.push_back("faster_than_roofline");
    }
  }
  // Work escaping the timed stream, seen two ways: a call captured into a CUDA graph leaves
  // an unjoined fork; or a batch of calls takes much longer in device-synchronised host time
  // than on the timed stream, beyond what the same batch with no calls takes.
  auto escaped = [&](const json& rank, const std::string& how) {
    res["verdict"] = "integrity_violation";
    res["message"] = "work escapes the timed stream on rank " + std::to_string(rank.get<int>()) + ": " + how +
                     "; run everything on ctx->stream, or join every stream you fork back to it before returning";
    res["failure"] = {{"rank", rank}, {"phase", "timing"}, {"reason", "timing_escape"}, {"detail", res["message"]}};
    for (auto key : {"timing", "speedup", "roofline", "busbw_gbps"}) res[key] = nullptr;
    flags.push_back("timing_escape");
  };
  for (auto& r : ranks) {
    if (!r.contains("escape")) continue;
    const json& x = r["escape"];
    double h = eval::stats_of(x["host_us"].get<std::vector<double>>()).median;
    double e = eval::stats_of(x["event_us"].get<std::vector<double>>()).median;
    double base = eval::stats_of(x["baseline_host_us"].get<std::vector<double>>()).median;
    int calls = x["calls"];
    std::string capture = x.value("capture", "unknown");
    res["escape_check"] = {{"calls", calls}, {"host_us", h}, {"event_us", e}, {"baseline_us", base}, {"capture", capture}};
    if (capture == "unjoined") {
      escaped(r["rank"], "pkb_run forks work off ctx->stream and never joins it back (a captured call leaves an "
                         "unjoined fork)");
      break;
    }
    if (h - e - base > std::max(50.0, 0.25 * e)) {
      escaped(r["rank"], std::to_string(calls) + " calls take " + fmt_us(h) + " us of device-synchronised host time but " +
                             fmt_us(e) + " us on the stream pkb times");
      break;
    }
  }
  for (auto& r : ranks)
    if (r.contains("clocks") && r["clocks"]["throttled"].get<bool>()) {
      flags.push_back("throttled");
      break;
    }
  if (p.ranks_per_gpu > 1) flags.push_back("shared_gpu");
  if (res["run"]["input_sets"].get<int>() < o.iters) flags.push_back("few_input_sets");
  res["flags"] = flags;
  if (ranks[0].contains("device_copy")) res["device_copy"] = ranks[0]["device_copy"];
  res["clocks"] = ranks[0].value("clocks", json());
}

}  // namespace

void add_eval_commands(CLI::App& app, Globals& g, Action& run) {
  static EvalOptions o;
  auto* cmd = app.add_subcommand("eval", "Check a candidate against the reference on every rank, then time both");
  cmd->add_option("-p,--problem", o.problem, "slug, original id or original stem")->required();
  cmd->add_option("-s,--solution", o.solution, "the candidate: a .cu (CUDA) or .cpp (CPU device) file")->required();
  cmd->add_option("-n,--trials", o.trials, "correctness trials, each with fresh random inputs")->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", o.warmup, "untimed calls before timing")->check(CLI::Range(0, 1000000));
  cmd->add_option("--iters", o.iters, "timed calls")->check(CLI::Range(1, 1000000));
  cmd->add_flag("--no-timing", o.no_timing, "check correctness only");
  cmd->add_option("--cache", o.cache, "cold: evict the L2 before each timed call; warm: do not")
      ->check(CLI::IsMember({"cold", "warm"}));
  cmd->add_option("--size", o.preset, kSizeHelp);
  cmd->add_option("--dtype", o.dtype, "element type for the problem's 'dt' tensors");
  cmd->add_option("--seed", o.seed, "replay a run's seed (inputs are drawn from it)");
  cmd->add_option("--json", o.json_out, "write the result (schema pkb.eval/1) here");
  cmd->add_option("--save-outputs", o.save, "write reference/, candidate/ and inputs/ rank_*.pt of the failing trial (else trial 0)");
  cmd->add_option("--hardware", o.hardware, "hardware profile for the roofline (auto: pkb doctor's pick)");
  cmd->add_option("--heap-size", o.heap_mib, "MiB of symmetric heap per rank for the candidate's own buffers");
  cmd->add_option("--input-sets-mib", o.sets_mib, "MiB per rank for distinct timed input sets (default: 8192 on CUDA, 256 on CPU)");
  cmd->add_flag("--no-reference-cache", o.no_ref_cache, "time the reference even when a cached timing exists");
  o.run.add_to(cmd);
  cmd->callback([&] {
    run = [&] {
      const spec::ProblemSpec& s = g.problem(o.problem);
      check_size(s, o.preset);
      if (!o.dtype.empty() && !spec::is_dtype_name(o.dtype))
        throw UsageError("unknown --dtype '" + o.dtype + "'; use one of " + spec::dtype_names());
      if (!fs::is_regular_file(o.solution)) throw UsageError("no such candidate file: " + o.solution);
      std::string dtype = o.dtype.empty() ? s.dtype : o.dtype;
      Placement p = place(o.run, &s, o.preset);
      for (auto& w : p.warnings) warn(w);
      uint64_t seed = make_seed(o.seed);
      std::vector<spec::HardwareProfile> profiles;
      const spec::HardwareProfile* hw = hardware_for(g, o.hardware, p, profiles);

      json res = {{"schema", "pkb.eval/1"}, {"problem", s.slug}, {"problem_id", s.id}, {"category", s.category},
                  {"failure", nullptr}, {"timing", nullptr}, {"speedup", nullptr}, {"busbw_gbps", nullptr},
                  {"roofline", nullptr}, {"flags", json::array()}};
      res["run"] = {{"world", p.world}, {"device", p.device}, {"gpu", p.gpu_name}, {"gpus", p.gpus},
                    {"ranks_per_gpu", p.ranks_per_gpu}, {"comm", p.comm}, {"hardware_profile", hw ? hw->name : ""},
                    {"size", o.preset}, {"dtype", dtype}, {"seed", std::to_string(seed)}, {"trials", o.trials},
                    {"warmup", o.warmup}, {"iters", o.iters}, {"cache", o.cache}, {"input_sets", nullptr}};
      res["versions"] = {{"pkb", PKB_VERSION}, {"torch", PKB_TORCH_VERSION},
                         {"cuda_runtime", p.probe.value("runtime_version", 0)},
                         {"cuda_driver", p.probe.value("driver_version", 0)}, {"nccl", p.probe.value("nccl_version", 0)}};
      printf("pkb eval %s  W=%d  device=%s%s  comm=%s  size=%s  seed=%llu  trials=%d\n", s.slug.c_str(), p.world,
             p.device.c_str(), p.gpu_name.empty() ? "" : (" (" + p.gpu_name + ")").c_str(), p.comm.c_str(),
             o.preset.c_str(), static_cast<unsigned long long>(seed), o.trials);
      fflush(stdout);

      auto t0 = std::chrono::steady_clock::now();
      build::Result b = build_for(g, o.solution, p);
      res["candidate"] = {{"path", o.solution}, {"sha256", b.source_sha256}, {"backend", b.backend}};
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
        return finish(kCompileError);
      }
      printf("candidate %s (%s, sha256 %.12s, %s)\n", o.solution.c_str(), b.backend.c_str(), b.source_sha256.c_str(),
             b.cached ? "cached build" : ("built in " + fmt_us(b.seconds) + " s").c_str());

      std::string cache_file = build::default_cache_dir() + "/reference-timing/" +
                               reference_timing_key(g, s, o, p, dtype, seed) + ".json";
      json cached_ref;
      if (!o.no_timing && !o.no_ref_cache && fs::exists(cache_file)) cached_ref = json::parse(io::read_file(cache_file), nullptr, false);
      bool time_reference = cached_ref.is_null() || cached_ref.is_discarded();
      double sets_mib = o.sets_mib > 0 ? o.sets_mib : (p.device == "cuda" ? 8192.0 / p.ranks_per_gpu : 256.0);
      json job = {{"mode", "eval"},          {"spec", s.path},
                  {"preset", o.preset},      {"seed", std::to_string(seed)},
                  {"trials", o.trials},      {"warmup", o.warmup},
                  {"iters", o.iters},        {"timing", !o.no_timing},
                  {"cache", o.cache},        {"library", b.library},
                  {"time_reference", time_reference},
                  {"set_budget_bytes", static_cast<size_t>(sets_mib * (1 << 20))},
                  {"candidate_heap_bytes", static_cast<size_t>(o.heap_mib * (1 << 20))},
                  {"reference_libs", g.reference_libs}};
      if (!o.dtype.empty()) job["dtype"] = o.dtype;
      if (!o.save.empty()) job["save_dir"] = fs::absolute(o.save).string();
      std::string label = "eval " + s.slug + " W=" + std::to_string(p.world);
      auto t_launch = std::chrono::steady_clock::now();
      launch::GroupReport rep = run_ranks(p, job, budgets(o.run, &s, o.preset, p), o.run.echo, label, o.trials);
      if (rep.outcome == launch::Outcome::Interrupted) {
        fprintf(stderr, "pkb: interrupted; no result\n");
        return int(kInterrupted);
      }
      judge(res, rep, s, o, p, hw, dtype, cached_ref);
      // Where the wall time went (bench/eval_cost.sh): the slowest rank at each step.
      auto entered = [&](const char* phase) {
        double t = 0;
        for (auto& rk : rep.ranks) t = std::max(t, rk.entered_s.count(phase) ? rk.entered_s.at(phase) : 0.0);
        return t;
      };
      res["costs_s"] = {{"startup", std::chrono::duration<double>(t_launch - process_start()).count() - b.seconds},
                        {"compile", b.seconds},
                        {"bootstrap", entered("init")},
                        {"init", entered("trial") - entered("init")},
                        {"trials", (o.no_timing ? entered("finish") : entered("timing_setup")) - entered("trial")},
                        {"timing", o.no_timing ? 0.0 : entered("finish") - entered("timing_setup")},
                        {"ranks_total", rep.wall_s}};
      if (rep.outcome != launch::Outcome::Ok && res["verdict"] != "compile_error") fprintf(stderr, "%s", rep.details().c_str());
      if (time_reference && res["verdict"] == "correct" && !res["timing"].is_null()) {
        fs::create_directories(fs::path(cache_file).parent_path());
        std::ofstream(cache_file) << cached_ref.dump() << "\n";
      }
      print_table(res);
      return finish(exit_for_verdict(res["verdict"]));
    };
  });

  static std::string build_src, build_device = "auto";
  auto* bcmd = app.add_subcommand("build", "Compile a candidate into the build cache and print the library's path");
  bcmd->add_option("-s,--solution", build_src, "the candidate file")->required();
  bcmd->add_option("--device", build_device, "cuda, cpu or auto (from the file's kind)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  bcmd->callback([&] {
    run = [&] {
      Placement p;
      std::string kind = build::backend_of(build_src);
      p.device = build_device != "auto" ? build_device : (kind == "cpu" ? "cpu" : "cuda");
      if (p.device == "cuda") {
        p.probe = probe_devices();
        p.gpus = static_cast<int>(p.probe.value("devices", json::array()).size());
      }
      build::Result b = build_for(g, build_src, p);
      if (!b.ok) {
        fprintf(stderr, "pkb: compile error: %s\n%s", b.error.c_str(), b.log.c_str());
        return int(kCompileError);
      }
      printf("%s\n", b.library.c_str());
      return int(kOk);
    };
  });
}

}  // namespace pkb::cli
