// pkb plan: the memory plan of evaluations, for many problems and world sizes at once,
// without starting a rank: bytes a rank, by part, against a device's memory (a hardware
// profile's, or --memory-limit). What pkb eval --dry-plan prints for one evaluation.
#include <cstdio>
#include <sstream>

#include "cli/commands.hpp"
#include "eval/memory_plan.hpp"
#include "eval/verdict.hpp"
#include "spec/dtype.hpp"
#include "sweep/candidates.hpp"

namespace pkb::cli {

namespace {

struct PlanOptions {
  std::string problems = "all", size = "default", dtype, hardware;
  std::vector<int> worlds;
  int ranks_per_gpu = 1, iters = 100;
  double memory_limit_gib = 0, capture_mib = 8192, heap_mib = 0;
  bool cpu = false, no_timing = false;
};

std::string g1(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", static_cast<double>(bytes) / double(uint64_t{1} << 30));
  return b;
}

}  // namespace

void add_plan_command(CLI::App& app, Globals& g, Action& run) {
  static PlanOptions o;
  auto* cmd = app.add_subcommand("plan", "Print the memory plan of evaluations (GiB a rank, by part) without starting any");
  cmd->add_option("-p,--problems", o.problems, "'all', a category key, or slugs, ids or stems, comma-separated")
      ->capture_default_str();
  cmd->add_option("--size", o.size, kSizeHelp)->capture_default_str();
  cmd->add_option("-w,--world-size", o.worlds, "ranks, one or a comma list (default: 1 and 8)")->delimiter(',');
  cmd->add_option("--ranks-per-gpu", o.ranks_per_gpu, "ranks sharing each GPU")->check(CLI::Range(1, 64));
  cmd->add_option("--dtype", o.dtype, "element type for the problems' 'dt' tensors (default: each spec's)")
      ->transform(dtype_spellings());
  cmd->add_option("--hardware", o.hardware, "the hardware profile whose GPU memory (hbm_gb, in GiB) to plan against")
      ->capture_default_str();
  cmd->add_option("--memory-limit", o.memory_limit_gib, "GiB of memory a device has (instead of --hardware's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--iters", o.iters, "timed calls (the captures wanted)")->check(CLI::Range(1, 1000000));
  cmd->add_option("--capture-mib", o.capture_mib, "MiB per rank for captured outputs, as pkb eval's")->check(CLI::PositiveNumber);
  cmd->add_option("--heap-size", o.heap_mib, "MiB of the candidate's own heap (default: pkb's)")->check(CLI::PositiveNumber);
  cmd->add_flag("--no-timing", o.no_timing, "plan an untimed evaluation");
  cmd->callback([&] {
    run = [&] {
      if (o.worlds.empty()) o.worlds = {1, 8};
      uint64_t memory = 0;
      std::string against;
      if (o.memory_limit_gib > 0) {
        memory = static_cast<uint64_t>(o.memory_limit_gib * double(uint64_t{1} << 30));
        against = std::to_string(o.memory_limit_gib) + " GiB (--memory-limit)";
      } else {
        if (o.hardware.empty())
          throw UsageError("pkb plan needs the device's memory: --hardware NAME (a profile of hardware/profiles.toml) "
                           "or --memory-limit GiB");
        std::vector<spec::HardwareProfile> profiles;
        launch::Placement none;
        const spec::HardwareProfile* hw = hardware_for(g, o.hardware, none, profiles);
        if (!hw || hw->hbm_gb <= 0) throw UsageError("hardware profile '" + o.hardware + "' states no hbm_gb");
        memory = static_cast<uint64_t>(hw->hbm_gb * double(uint64_t{1} << 30));
        against = hw->name + " (" + g1(memory) + " GiB a GPU)";
      }
      if (!o.dtype.empty() && !spec::is_dtype_name(o.dtype))
        throw UsageError("unknown --dtype '" + o.dtype + "'; use one of " + spec::dtype_names());
      std::vector<std::string> slugs;
      try {
        slugs = sweep::select_problems(o.problems, g.registry());
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
      printf("memory plan at --size %s against %s, %d rank%s a GPU, %s\n\n", o.size.c_str(), against.c_str(),
             o.ranks_per_gpu, o.ranks_per_gpu > 1 ? "s" : "", o.no_timing ? "untimed" : "timed");
      printf("| problem | W | candidate rank: inputs+outputs set + own heap + runtime [+ NCCL] [+ the reference's working "
             "memory] (GiB) | judge rank: reference peak + captures + runtime [+ NCCL] (GiB) | per GPU (GiB; the reference's "
             "working memory once) | fits |\n");
      printf("|---|---|---|---|---|---|\n");
      int refused = 0;
      for (auto& slug : slugs) {
        const spec::ProblemSpec& s = g.problem(slug);
        for (int w : o.worlds) {
          std::string why;
          try {
            s.size_values(o.size);
            why = s.world_size_error(w, o.size);
          } catch (const spec::SpecError& e) {
            why = e.what();
          }
          if (!why.empty()) {
            printf("| %s | %d | — | — | — | not run: %s |\n", s.slug.c_str(), w, why.c_str());
            continue;
          }
          eval::MemoryRequest r;
          r.spec = &s;
          r.size = o.size;
          r.dtype = o.dtype.empty() ? s.dtype : o.dtype;
          r.world = w;
          r.ranks_per_gpu = o.ranks_per_gpu;
          r.timing = !o.no_timing;
          r.nccl = o.ranks_per_gpu == 1 && w > 1;
          r.memory = memory;
          r.iters = o.iters;
          r.capture_budget = static_cast<uint64_t>(o.capture_mib / o.ranks_per_gpu * (1 << 20));
          r.candidate_heap = static_cast<uint64_t>(o.heap_mib * (1 << 20));
          eval::MemoryPlan p = eval::plan_memory(r);
          auto parts = [](const std::vector<eval::MemoryPart>& v) {
            std::string s;
            for (auto& x : v) s += (s.empty() ? "" : " + ") + g1(x.bytes);
            return s;
          };
          std::string fits = p.fits ? (p.notes.empty() ? "yes" : "yes, " + std::to_string(p.captures) + " captures") : "NO";
          if (!p.fits) ++refused;
          printf("| %s | %d | %s = %s | %s = %s | %s | %s |\n", s.slug.c_str(), w, parts(p.candidate).c_str(),
                 g1(p.candidate_rank).c_str(), parts(p.judge).c_str(), g1(p.judge_rank).c_str(), g1(p.per_gpu).c_str(),
                 fits.c_str());
        }
      }
      printf("\nThe judge's reference peak is the spec's [memory] reference_peak where it declares one, else estimated "
             "(its inputs and outputs and one temporary of the larger).\n");
      return refused ? int(eval::kWrong) : int(eval::kOk);
    };
  });
}

}  // namespace pkb::cli
