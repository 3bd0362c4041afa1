// Runs a helper program (nvcc, the device probe, MPS control) and collects its output,
// with a deadline. Never used for ranks: those are run_group's.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pkb::launch {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal or the deadline
  int signal = 0;
  bool timed_out = false;
  std::string out;  // stdout
  std::string err;  // stderr
  bool ok() const { return exit_code == 0; }
};

// argv[0] is looked up in PATH. `env` entries are added to (or replace) the environment.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s,
                          const std::vector<std::pair<std::string, std::string>>& env = {},
                          const std::string& stdin_text = "");

// The absolute path of a program on PATH, or "".
std::string which(const std::string& program);

// This executable's path (/proc/self/exe).
std::string self_exe();

}  // namespace pkb::launch
