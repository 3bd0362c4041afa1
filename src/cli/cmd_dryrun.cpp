// pkb dryrun: the reference on every rank, end to end, optionally saving what it made.
#include <filesystem>

#include "cli/commands.hpp"
#include "eval/verdict.hpp"
#include "spec/dtype.hpp"

namespace pkb::cli {

namespace {

struct DryrunOptions {
  std::string problem, solution = "reference", seed, save;
  rank::Job job;
  RunOptions run;
};

}  // namespace

void add_dryrun_command(CLI::App& app, Globals& g, Action& run) {
  static DryrunOptions o;
  rank::Job& j = o.job;
  j.mode = "dryrun";
  j.trials = 1;
  auto* cmd = app.add_subcommand("dryrun", "Run a problem's reference on every rank");
  cmd->add_option("-p,--problem", o.problem, "slug, original id or original stem")->required();
  cmd->add_option("--solution", o.solution, "what to run (only 'reference' for dryrun)")
      ->check(CLI::IsMember({"reference"}));
  cmd->add_option("-n,--trials", j.trials, "trials, each with fresh random inputs")->check(CLI::Range(1, 100000));
  cmd->add_option("--size", j.size, kSizeHelp);
  cmd->add_option("--dtype", j.dtype, "element type for the problem's 'dt' tensors")->transform(dtype_spellings());
  cmd->add_option("--seed", o.seed, "replay a run's seed");
  cmd->add_option("--save-outputs", o.save, "write rank_<r>.pt and rank_<r>_inputs.pt of trial 0 here");
  cmd->add_flag("--no-comm", j.no_comm, "turn every collective into a no-op (what pkb validate checks)");
  o.run.add_to(cmd);
  cmd->callback([&] {
    run = [&] {
      const spec::ProblemSpec& s = g.problem(o.problem);
      check_size(s, j.size);
      if (!j.dtype.empty() && !spec::is_dtype_name(j.dtype))
        throw UsageError("unknown --dtype '" + j.dtype + "'; use one of " + spec::dtype_names());
      launch::Placement p = place(o.run, &s, j.size);
      j.spec = s.path;
      j.seed = make_seed(o.seed);
      if (!o.save.empty()) j.save_dir = std::filesystem::absolute(o.save).string();
      printf("pkb dryrun %s  W=%d  device=%s%s  comm=%s  size=%s  seed=%llu  trials=%d\n", s.slug.c_str(), p.world,
             p.device.c_str(), p.gpu_name.empty() ? "" : (" (" + p.gpu_name + ")").c_str(), p.comm.c_str(),
             j.size.c_str(), static_cast<unsigned long long>(j.seed), j.trials);
      fflush(stdout);
      launch::GroupReport r = run_ranks(g, p, o.run, j, &s, "dryrun " + s.slug + " W=" + std::to_string(p.world));
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
        printf("%-5d %-10.3f %s\n", rk.rank, res.value("run_ms", 0.0) / j.trials, outs.c_str());
      }
      if (!o.save.empty()) printf("saved rank_*.pt and rank_*_inputs.pt (trial 0) under %s\n", o.save.c_str());
      printf("ok (%.1f s)\n", r.wall_s);
      return int(eval::kOk);
    };
  });
}

}  // namespace pkb::cli
