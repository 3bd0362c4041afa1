#include "eval/eval_command.hpp"

#include <sstream>

namespace pkb::eval {

std::vector<std::string> EvalCommand::argv() const {
  std::vector<std::string> a = {pkb};
  a.insert(a.end(), global_args.begin(), global_args.end());
  a.insert(a.end(), {"eval", "--problem", problem, "--solution", solution, "--world-size", std::to_string(world),
                     "--device", device});
  std::vector<std::string> flags = rank::to_flags(settings);
  a.insert(a.end(), flags.begin(), flags.end());
  if (seed) a.insert(a.end(), {"--seed", std::to_string(*seed)});
  if (timeout > 0) {
    std::ostringstream t;
    t << timeout;
    a.insert(a.end(), {"--timeout", t.str()});
  }
  if (!cpus.empty()) a.insert(a.end(), {"--cpus", cpus});
  if (!json_out.empty()) a.insert(a.end(), {"--json", json_out});
  return a;
}

}  // namespace pkb::eval
