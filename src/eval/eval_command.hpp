// The `pkb eval` command line, built in one place: pkb sweep and pkb agent start `pkb eval`
// children with it, so they evaluate alike. Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rank/settings.hpp"

namespace pkb::eval {

// How another command runs one evaluation: the evaluation's settings (rank/settings.hpp)
// and where it runs, each a flag of `pkb eval`.
struct EvalCommand {
  std::string pkb;                       // the executable
  std::vector<std::string> global_args;  // --root, --problem-dir, --reference-lib: the same problems
  std::string problem, solution;
  int world = 0;
  std::string device;              // cuda or cpu
  rank::EvalSettings settings;     // those at their default are not spelled out
  std::optional<uint64_t> seed;    // none: pkb eval draws its own secret seed
  double timeout = 0;  // --timeout per phase; 0: pkb's budgets
  std::string cpus;    // --cpus: the CPUs its pinning may take ("": any)
  std::string json_out;

  std::vector<std::string> argv() const;
};

}  // namespace pkb::eval
