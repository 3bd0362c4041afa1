// pkb compare: saved outputs (rank_<r>.pt, as dryrun and eval --save-outputs write them)
// of two folders, rank by rank and output by output. Torch-free interface.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace pkb::eval {

struct DirReport {
  bool ok = true;
  int ranks = 0;
  std::vector<std::string> lines;  // one per rank and output
};

// `tolerance(output index, dtype name)` gives (atol, rtol). Throws std::runtime_error when a
// folder holds no rank_<r>.pt or the two hold different ranks.
DirReport compare_dirs(const std::string& a, const std::string& b,
                       const std::function<std::pair<double, double>(size_t, const std::string&)>& tolerance);

}  // namespace pkb::eval
