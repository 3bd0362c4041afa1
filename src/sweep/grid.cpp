#include "sweep/grid.hpp"

#include <map>
#include <set>
#include <stdexcept>

namespace pkb::sweep {

Grid plan_grid(const spec::Registry& reg, const GridRequest& req) {
  Grid grid;
  std::vector<std::string> wanted = select_problems(req.problems, reg);
  Discovery found = discover(req.solutions, reg);
  for (size_t i = 0; i < found.skipped.size() && i < 5; ++i) grid.warnings.push_back("skipped " + found.skipped[i]);
  if (found.skipped.size() > 5)
    grid.warnings.push_back("skipped " + std::to_string(found.skipped.size() - 5) + " more such files");
  // Every module of the original's format left out, each with its reason.
  for (auto& u : found.unplaced) grid.warnings.push_back("not placed: " + u);
  if (!found.unplaced.empty())
    grid.warnings.push_back(std::to_string(found.unplaced.size()) + " original-format file(s) not placed (above)");

  const std::string& device = req.settings.device;
  std::vector<int> worlds = req.worlds;
  if (worlds.empty()) worlds = {device == "cuda" ? req.gpus : 4};

  std::set<std::string> selected(wanted.begin(), wanted.end());
  std::vector<std::string> problems;  // as the candidates come: by problem id
  std::map<std::string, std::vector<const Candidate*>> by_problem;
  size_t other_device = 0;
  for (auto& c : found.candidates) {
    if (!selected.count(c.problem)) continue;
    if (!c.device.empty() && c.device != device) {
      ++other_device;
      continue;
    }
    if (by_problem[c.problem].empty()) problems.push_back(c.problem);
    by_problem[c.problem].push_back(&c);
  }
  if (other_device)
    grid.warnings.push_back("left out " + std::to_string(other_device) + " candidate(s) for the " +
                            (device == "cpu" ? "CUDA" : "CPU") + " device (this sweep runs on the " +
                            (device == "cpu" ? "CPU" : "CUDA") + " device; see --device)");

  for (auto& slug : problems) {
    const spec::ProblemSpec& spec = reg.find(slug);
    try {
      spec.size_values(req.settings.eval.size);
    } catch (const spec::SpecError& e) {
      grid.warnings.push_back(std::string(e.what()) + "; its candidates are left out");
      continue;
    }
    for (int w : worlds) {
      std::string err = spec.world_size_error(w, req.settings.eval.size);
      if (!err.empty()) {
        grid.warnings.push_back("left out " + slug + " at W=" + std::to_string(w) + ": " + err);
        continue;
      }
      for (auto* c : by_problem[slug]) {
        Candidate on = *c;
        if (on.device.empty()) on.device = device;  // the reference as the candidate runs where the sweep does
        grid.tasks.push_back({on, w, 0, task_key(on, w, req.settings)});
      }
    }
  }
  if (grid.tasks.empty())
    throw std::invalid_argument("no candidate to evaluate under " + req.solutions.front() + " for --problems " +
                                req.problems + " on the " + device +
                                " device; candidates are solutions_<backend>/<run>/<problem>/sample_<k>.<ext> or "
                                "solutions_<backend>/<problem>.<ext>");
  return grid;
}

size_t count_candidates(const spec::Registry& reg, const GridRequest& req) {
  std::vector<std::string> wanted = select_problems(req.problems, reg);
  std::set<std::string> selected(wanted.begin(), wanted.end());
  size_t n = 0;
  for (auto& c : discover(req.solutions, reg).candidates) n += selected.count(c.problem);
  if (n == 0) throw std::invalid_argument("no candidate under the --solutions folders for --problems " + req.problems);
  return n;
}

}  // namespace pkb::sweep
