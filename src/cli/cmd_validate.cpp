// pkb validate: is a problem's check worth anything? pkb compare: saved outputs offline.
#include <filesystem>
#include <map>

#include "cli/commands.hpp"
#include "cli/prompting.hpp"
#include "eval/compare_dirs.hpp"
#include "eval/verdict.hpp"
#include "run/rank_library.hpp"
#include "spec/dtype.hpp"

namespace pkb::cli {

namespace {

// The world size a problem is validated at: --world-size, else the smallest W >= 2 its
// constraints allow (4 where both 2 and 4 do; with one rank nothing is communicated); 0
// when none from 2 to 8 fits.
int validation_world(const spec::ProblemSpec& s, const RunOptions& ro, const std::string& size) {
  if (ro.place.world) return ro.place.world;
  for (int w = std::max(2, s.min_world); w <= std::min(8, s.max_world); ++w)
    if (s.world_size_error(w, size).empty()) return w == 2 && s.world_size_error(4, size).empty() ? 4 : w;
  return 0;
}

// Validates problems of one world size on one set of ranks, in turn; returns how many are
// broken (an answer that skips the work passes their check) and adds those it ran to
// `validated`. `skip_unfit`: problems the world size does not fit are left out
// (place_all).
int validate_group(Globals& g, std::vector<const spec::ProblemSpec*> todo, int world, RunOptions ro,
                   rank::Job job, const std::string& seed, bool skip_unfit, int& validated) {
  ro.place.world = world;
  const spec::ProblemSpec* slowest = nullptr;
  launch::Placement p = place_all(ro, todo, job.size, slowest, skip_unfit);
  validated += static_cast<int>(todo.size());
  job.specs.clear();
  for (auto* s : todo) job.specs.push_back(s->path);
  job.seed = make_seed(seed);
  std::string what = todo.size() == 1 ? todo.front()->slug : std::to_string(todo.size()) + " problems";
  launch::GroupReport r = run_ranks(g, p, ro, job, slowest, "validate " + what);
  if (r.outcome != launch::Outcome::Ok) {
    for (auto* s : todo) printf("%-44s W=%d  ERROR\n", s->slug.c_str(), p.world);
    fprintf(stderr, "%s", r.details().c_str());
    return static_cast<int>(todo.size());
  }
  std::vector<nlohmann::json> results;  // every rank's, one entry a problem
  for (auto& rk : r.ranks) results.push_back(nlohmann::json::parse(rk.result)["problems"]);
  int broken = 0;
  for (size_t k = 0; k < todo.size(); ++k) {
    const spec::ProblemSpec& s = *todo[k];
    bool ok = true;
    std::string line;
    for (const char* attack : {"zeros", "passthrough", "no_communication"}) {
      bool caught = false;
      for (auto& res : results) caught = caught || !res.at(k)[attack].is_null();
      ok = ok && caught;
      line += std::string("  ") + attack + (caught ? " rejected" : " ACCEPTED");
    }
    printf("%-44s W=%d %s\n", s.slug.c_str(), p.world, line.c_str());
    if (!ok)
      printf("  %s is broken: an answer that skips the work passes its check; tighten its tolerances or change its "
             "inputs (%s)\n",
             s.slug.c_str(), s.path.c_str());
    broken += !ok;
  }
  return broken;
}

}  // namespace

void add_validate_commands(CLI::App& app, Globals& g, Action& run) {
  static std::vector<std::string> problems;
  static rank::Job job;
  job.mode = "validate";
  job.trials = 5;
  static std::string seed, save;
  static RunOptions ro;
  auto* cmd = app.add_subcommand(
      "validate", "Check that an all-zero answer, the inputs passed through and no communication all fail");
  cmd->add_option("problems", problems, "problems (slug, id or stem), category keys (coll, tp, ...) or 'all'")->required();
  cmd->add_option("-n,--trials", job.trials, "trials per problem")->check(CLI::Range(1, 1000));
  cmd->add_option("--size", job.size, kSizeHelp);
  cmd->add_option("--dtype", job.dtype, "element type for the problems' 'dt' tensors")->transform(dtype_spellings());
  cmd->add_option("--seed", seed, "replay a seed");
  cmd->add_option("--save-outputs", save,
                  "write the reference's rank_<r>.pt and rank_<r>_inputs.pt of trial 0 here (several problems: in <slug>/)");
  ro.add_to(cmd);
  cmd->callback([&] {
    run = [&] {
      std::vector<const spec::ProblemSpec*> todo = select_problems(g, problems);
      check_dtype(job.dtype);
      if (!save.empty()) job.save_dir = std::filesystem::absolute(save).string();
      job.save_by_problem = todo.size() > 1;
      // A category or 'all' among the keys: what --world-size does not fit is left out.
      bool whole = names_categories(problems);
      // One set of ranks a world size: the problems that share it run in turn on it.
      std::map<int, std::vector<const spec::ProblemSpec*>> by_world;
      for (auto* s : todo) {
        check_size(*s, job.size);
        int w = validation_world(*s, ro, job.size);
        if (w) by_world[w].push_back(s);
        else printf("%-44s skipped: no world size from 2 to 8 fits its constraints\n", s->slug.c_str());
      }
      int broken = 0, validated = 0;
      for (auto& [w, group] : by_world)
        broken += validate_group(g, group, w, ro, job, seed, whole, validated);
      int skipped = static_cast<int>(todo.size()) - validated;
      printf("%d problem%s, %d broken%s\n", validated, validated == 1 ? "" : "s", broken,
             skipped ? (", " + std::to_string(skipped) + " skipped").c_str() : "");
      return broken ? int(eval::kWrong) : int(eval::kOk);
    };
  });

  static std::string dir_a, dir_b, problem;
  static double atol = -1, rtol = -1;
  auto* cmp = app.add_subcommand("compare", "Compare saved outputs (rank_<r>.pt) of two folders");
  cmp->add_option("a", dir_a, "a folder of rank_<r>.pt")->required()->check(CLI::ExistingDirectory);
  cmp->add_option("b", dir_b, "the folder to compare with (the reference's)")->required()->check(CLI::ExistingDirectory);
  cmp->add_option("-p,--problem", problem, "take per-output tolerances from this problem's spec");
  cmp->add_option("--atol", atol, "absolute tolerance (default: the spec's, else by dtype)");
  cmp->add_option("--rtol", rtol, "relative tolerance (default: the spec's, else by dtype)");
  cmp->callback([&] {
    run = [&] {
      const spec::ProblemSpec* s = problem.empty() ? nullptr : &g.problem(problem);
      auto tolerance = [&](size_t i, const std::string& dtype) {
        spec::DType d = spec::dtype_from_name(dtype);
        double a = spec::default_atol(d), r = spec::default_rtol(d);
        if (s && i < s->outputs.size()) {
          a = s->outputs[i].atol.value_or(a);
          r = s->outputs[i].rtol.value_or(r);
        }
        return std::make_pair(atol >= 0 ? atol : a, rtol >= 0 ? rtol : r);
      };
      eval::DirReport rep;
      try {
        rep = run::rank_library().compare_dirs(dir_a, dir_b, tolerance);  // loads libtorch, for the tensors
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
      for (auto& l : rep.lines) printf("%s\n", l.c_str());
      printf("%s (%d ranks)\n", rep.ok ? "equal" : "DIFFERENT", rep.ranks);
      return rep.ok ? int(eval::kOk) : int(eval::kWrong);
    };
  });
}

}  // namespace pkb::cli
