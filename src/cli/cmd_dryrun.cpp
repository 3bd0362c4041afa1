// pkb dryrun: the reference on every rank, end to end, optionally saving what it made.
#include <filesystem>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "spec/dtype.hpp"

namespace pkb::cli {

namespace {

struct DryrunOptions {
  std::string problem, solution = "reference", preset = "default", dtype, seed, save;
  int trials = 1;
  bool no_comm = false;
  RunOptions run;
};

}  // namespace

void add_dryrun_command(CLI::App& app, Globals& g, Action& run) {
  static DryrunOptions o;
  auto* cmd = app.add_subcommand("dryrun", "Run a problem's reference on every rank");
  cmd->add_option("-p,--problem", o.problem, "slug, original id or original stem")->required();
  cmd->add_option("--solution", o.solution, "what to run (only 'reference' for dryrun)")
      ->check(CLI::IsMember({"reference"}));
  cmd->add_option("-n,--trials", o.trials, "trials, each with fresh random inputs")->check(CLI::Range(1, 100000));
  cmd->add_option("--size", o.preset, kSizeHelp);
  cmd->add_option("--dtype", o.dtype, "element type for the problem's 'dt' tensors");
  cmd->add_option("--seed", o.seed, "replay a run's seed");
  cmd->add_option("--save-outputs", o.save, "write rank_<r>.pt and rank_<r>_inputs.pt of trial 0 here");
  cmd->add_flag("--no-comm", o.no_comm, "turn every collective into a no-op (what pkb validate checks)");
  o.run.add_to(cmd);
  cmd->callback([&] {
    run = [&] {
      const spec::ProblemSpec& s = g.problem(o.problem);
      check_size(s, o.preset);
      if (!o.dtype.empty() && !spec::is_dtype_name(o.dtype))
        throw UsageError("unknown --dtype '" + o.dtype + "'; use one of " + spec::dtype_names());
      Placement p = place(o.run, &s, o.preset);
      for (auto& w : p.warnings) warn(w);
      uint64_t seed = make_seed(o.seed);
      nlohmann::json job = {{"mode", "dryrun"},  {"spec", s.path},       {"preset", o.preset},
                            {"seed", std::to_string(seed)}, {"trials", o.trials}, {"no_comm", o.no_comm},
                            {"reference_libs", g.reference_libs}};
      if (!o.dtype.empty()) job["dtype"] = o.dtype;
      if (!o.save.empty()) job["save_dir"] = std::filesystem::absolute(o.save).string();
      printf("pkb dryrun %s  W=%d  device=%s%s  comm=%s  size=%s  seed=%llu  trials=%d\n", s.slug.c_str(), p.world,
             p.device.c_str(), p.gpu_name.empty() ? "" : (" (" + p.gpu_name + ")").c_str(), p.comm.c_str(),
             o.preset.c_str(), static_cast<unsigned long long>(seed), o.trials);
      fflush(stdout);
      std::string label = "dryrun " + s.slug + " W=" + std::to_string(p.world);
      launch::GroupReport r = run_ranks(p, job, budgets(o.run, &s, o.preset, p), o.run.echo, label, o.trials);
      if (r.outcome != launch::Outcome::Ok) {
        fprintf(stderr, "%s", r.details().c_str());
        return exit_for(r);
      }
      printf("%-5s %-10s %s\n", "rank", "ms/trial", "outputs");
      for (auto& rk : r.ranks) {
        auto res = nlohmann::json::parse(rk.result);
        std::string outs;
        for (auto& y : res["outputs"]) {
          std::string shape;
          for (auto& d : y["shape"]) shape += (shape.empty() ? "" : ",") + std::to_string(d.get<int64_t>());
          outs += (outs.empty() ? "" : "  ") + y["name"].get<std::string>() + " " + y["dtype"].get<std::string>() +
                  "[" + shape + "]";
        }
        printf("%-5d %-10.3f %s\n", rk.rank, res.value("run_ms", 0.0) / o.trials, outs.c_str());
      }
      if (!o.save.empty()) printf("saved rank_*.pt and rank_*_inputs.pt (trial 0) under %s\n", o.save.c_str());
      printf("ok (%.1f s)\n", r.wall_s);
      return int(kOk);
    };
  });
}

}  // namespace pkb::cli
