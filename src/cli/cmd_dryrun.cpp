// pkb dryrun: the reference on every rank, end to end, optionally saving what it made.
#include <filesystem>

#include "cli/commands.hpp"
#include "cli/prompting.hpp"
#include "eval/stats.hpp"
#include "eval/verdict.hpp"
#include "io/files.hpp"
#include "spec/hardware.hpp"
#include "spec/dtype.hpp"

namespace pkb::cli {

namespace {

struct DryrunOptions {
  std::vector<std::string> problems;
  std::string solution = "reference", seed, save, json_out, hardware = "auto";
  bool time = false;
  rank::Job job;
  RunOptions run;
};

// The reference's timing over the ranks' reports: statistics of the slowest rank per
// call, the counts used, the roofline, the peak device memory of a rank, and how long rank
// 0's host held a call before it returned (near the median: the host paces the reference,
// launching its work or waiting on the device where it synchronises).
nlohmann::json timing_of(const std::vector<nlohmann::json>& ranks, const spec::ProblemSpec& s, const rank::Job& j,
                         int world, const std::string& dtype, const spec::HardwareProfile* hw) {
  std::vector<std::vector<double>> per_rank;
  double peak = 0;
  int warmup = 0;
  for (auto& res : ranks) {
    per_rank.push_back(res["timing"]["us"].get<std::vector<double>>());
    warmup = res["timing"]["warmup"].get<int>();
    peak = std::max(peak, res.value("peak_bytes", 0.0));
  }
  eval::Stats st = eval::stats_of(eval::slowest_per_call(per_rank));
  nlohmann::json out = {{"timing", st.to_json()},
                        {"counts", {{"warmup", warmup}, {"iters", st.samples}}},
                        {"memory", {{"peak_bytes", peak}}},
                        {"roofline", nullptr}};
  const nlohmann::json& host = ranks.at(0)["timing"].value("host", nlohmann::json());
  if (host.is_object())
    out["host"] = {{"enqueue_median_us", eval::stats_of(host.at("enqueue_us").get<std::vector<double>>()).median}};
  if (hw) {
    eval::Bound b = eval::roofline_bound(s, j.size, world, dtype, *hw);
    if (b.us > 0 && st.median > 0)
      out["roofline"] = {{"bound_us", b.us}, {"fraction", b.us / st.median}, {"limiter", b.limiter}, {"hardware", hw->name}};
  }
  return out;
}

}  // namespace

void add_dryrun_command(CLI::App& app, Globals& g, Action& run) {
  static DryrunOptions o;
  rank::Job& j = o.job;
  j.mode = "dryrun";
  j.trials = 1;
  auto* cmd = app.add_subcommand("dryrun", "Run a problem's reference on every rank (several problems: in turn, on the same ranks)");
  cmd->add_option("-p,--problem", o.problems, "slug, original id or original stem; several, a category key (tp, ep, ...) or 'all'")
      ->required();
  cmd->add_option("--solution", o.solution, "what to run (only 'reference' for dryrun)")
      ->check(CLI::IsMember({"reference"}));
  cmd->add_option("-n,--trials", j.trials, "trials, each with fresh random inputs")->check(CLI::Range(1, 100000));
  cmd->add_option("--size", j.size, kSizeHelp);
  cmd->add_option("--dtype", j.dtype, "element type for the problem's 'dt' tensors")->transform(dtype_spellings());
  cmd->add_option("--seed", o.seed, "replay a run's seed");
  cmd->add_option("--save-outputs", o.save, "write rank_<r>.pt and rank_<r>_inputs.pt of trial 0 here (several problems: in <slug>/)");
  cmd->add_flag("--no-comm", j.no_comm, "turn every collective into a no-op (what pkb validate checks)");
  cmd->add_flag("--time", o.time, "then time the reference as pkb eval's judges do (warm-up, timed calls on fresh inputs)");
  cmd->add_option("--warmup", j.warmup, "--time: warm-up calls")->check(CLI::Range(0, 1000000))->capture_default_str();
  cmd->add_option("--iters", j.iters, "--time: timed calls")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--timing-budget", j.timing_budget_s, "--time: seconds of timed calls (never under --min-iters)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--min-iters", j.min_iters, "--time: timed calls whatever the budget")->check(CLI::Range(1, 1000000));
  cmd->add_option("--hardware", o.hardware, "--time: hardware profile for the roofline (auto: pkb doctor's pick)");
  cmd->add_option("--json", o.json_out,
                  "write each problem's record here: how many outputs its reference copies into place (copies); "
                  "with --time its timing, roofline and peak memory");
  o.run.add_to(cmd);
  cmd->callback([&] {
    run = [&] {
      std::vector<const spec::ProblemSpec*> todo = select_problems(g, o.problems);
      for (auto* s : todo) check_size(*s, j.size);
      if (!j.dtype.empty() && !spec::is_dtype_name(j.dtype))
        throw UsageError("unknown --dtype '" + j.dtype + "'; use one of " + spec::dtype_names());
      // A category or 'all' among the keys: what the world size does not fit is left out
      // (with a line); problems named alone must all fit.
      const spec::ProblemSpec* slowest = nullptr;
      launch::Placement p = place_all(o.run, todo, j.size, slowest, names_categories(o.problems));
      const bool several = todo.size() > 1;
      j.specs.clear();
      for (auto* s : todo) j.specs.push_back(s->path);
      j.seed = make_seed(o.seed);
      j.timing = o.time;
      if (!o.save.empty()) j.save_dir = std::filesystem::absolute(o.save).string();
      j.save_by_problem = several;
      std::string what = several ? std::to_string(todo.size()) + " problems" : todo.front()->slug;
      printf("pkb dryrun %s  W=%d  device=%s%s  comm=%s  size=%s  seed=%llu  trials=%d\n", what.c_str(), p.world,
             launch::name(p.device), p.gpu_name.empty() ? "" : (" (" + p.gpu_name + ")").c_str(), launch::name(p.comm),
             j.size.c_str(), static_cast<unsigned long long>(j.seed), j.trials);
      fflush(stdout);
      launch::GroupReport r = run_ranks(g, p, o.run, j, slowest, "dryrun " + what + " W=" + std::to_string(p.world));
      if (r.outcome != launch::Outcome::Ok) {
        fprintf(stderr, "%s", r.details().c_str());
        return exit_for(r);
      }
      std::vector<spec::HardwareProfile> profiles;
      const spec::HardwareProfile* hw = o.time ? hardware_for(g, o.hardware, p, profiles) : nullptr;
      std::vector<nlohmann::json> results;  // every rank's, one entry a problem
      for (auto& rk : r.ranks) results.push_back(nlohmann::json::parse(rk.result)["problems"]);
      nlohmann::json records = nlohmann::json::array();
      for (size_t k = 0; k < todo.size(); ++k) {
        const spec::ProblemSpec& s = *todo[k];
        std::vector<nlohmann::json> ranks;  // this problem's result from every rank
        for (auto& res : results) ranks.push_back(res.at(k));
        if (several) printf("%s\n", s.slug.c_str());
        printf("%-5s %-10s %s\n", "rank", "ms/trial", "outputs");
        for (size_t q = 0; q < ranks.size(); ++q) {
          std::string outs;
          for (auto& y : ranks[q]["outputs"]) {
            std::string shape;
            for (auto& d : y["shape"]) shape += (shape.empty() ? "" : ",") + std::to_string(d.get<int64_t>());
            outs += (outs.empty() ? "" : "  ") + y["name"].get<std::string>() + " " + y["dtype"].get<std::string>() +
                    "[" + shape + "]";
          }
          printf("%-5d %-10.3f %s\n", r.ranks[q].rank, ranks[q].value("run_ms", 0.0) / j.trials, outs.c_str());
        }
        // Outputs the reference set from tensors it made, each a copy into its slot (the most
        // of any rank's call): what a reference writing in place keeps at 0
        // (a copy is time the candidate need not spend).
        int copies = 0;
        for (auto& res : ranks) copies = std::max(copies, res.value("copies", 0));
        if (copies > 0) printf("the reference copies %d of its outputs into place (Outputs::set)\n", copies);
        std::string dtype = j.dtype.empty() ? s.dtype : j.dtype;
        nlohmann::json t = o.time ? timing_of(ranks, s, j, p.world, dtype, hw) : nlohmann::json::object();
        t["problem"] = s.slug;
        t["run"] = {{"world", p.world}, {"device", launch::name(p.device)}, {"gpu", p.gpu_name}, {"ranks_per_gpu", p.ranks_per_gpu},
                    {"size", j.size}, {"dtype", dtype}};
        t["copies"] = copies;
        records.push_back(t);
        if (!o.time) continue;
        const nlohmann::json& st = t["timing"];
        printf("reference: median %.1f us (IQR %.1f), %d timed calls after %d warm-up", st["median_us"].get<double>(),
               st["iqr_us"].get<double>(), t["counts"]["iters"].get<int>(), t["counts"]["warmup"].get<int>());
        if (!t["roofline"].is_null())
          printf("; %.1f%% of the %s roofline bound %.1f us (%s)", 100 * t["roofline"]["fraction"].get<double>(),
                 hw->name.c_str(), t["roofline"]["bound_us"].get<double>(), t["roofline"]["limiter"].get<std::string>().c_str());
        if (t.contains("host")) printf("; its host held a call %.1f us", t["host"]["enqueue_median_us"].get<double>());
        printf("\n");
      }
      if (!o.save.empty())
        printf("saved rank_*.pt and rank_*_inputs.pt (trial 0) under %s%s\n", o.save.c_str(), several ? "/<problem>" : "");
      // One problem's record as an object, several as an array of them.
      if (!o.json_out.empty()) io::write_file_atomically(o.json_out, (several ? records : records.at(0)).dump(2) + "\n");
      printf("ok (%.1f s)\n", r.wall_s);
      return int(eval::kOk);
    };
  });
}

}  // namespace pkb::cli
