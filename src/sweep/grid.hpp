// The grid of a sweep: problem by problem (by id), each world size its problem allows at
// the sweep's size, each candidate for the sweep's device.
#pragma once

#include <string>
#include <vector>

#include "spec/registry.hpp"
#include "sweep/candidates.hpp"

namespace pkb::sweep {

struct GridRequest {
  std::vector<std::string> solutions;  // folders or files
  std::string problems = "all";        // select_problems' selector
  std::vector<int> worlds;             // empty: the visible GPUs (4 on the CPU device)
  int gpus = 0;                        // visible GPUs
  Settings settings;                   // settings.device: "cpu" or "cuda", resolved
};

struct Grid {
  std::vector<Task> tasks;
  std::vector<std::string> warnings;  // what was left out, and why
};

// Throws std::invalid_argument naming the fix when nothing is left to evaluate.
Grid plan_grid(const spec::Registry& registry, const GridRequest& req);

// How many candidates the request's folders hold for its problems (any device, any W).
// Throws std::invalid_argument when there are none.
size_t count_candidates(const spec::Registry& registry, const GridRequest& req);

}  // namespace pkb::sweep
