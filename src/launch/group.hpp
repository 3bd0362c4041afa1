// Starts one worker process per rank and watches them until all finish or one fails.
//
// The parent never touches CUDA, NVML or NCCL: each rank is a fork+exec of pkb itself,
// in a process group of its own (so the group can be killed as one) that dies with the
// parent (PR_SET_PDEATHSIG). The parent serves the bootstrap channel (channel.hpp),
// keeps the last lines each rank printed, and enforces a deadline on every phase a rank
// announces. A crash or an overrun kills the whole group at once.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace pkb::launch {

struct GroupOptions {
  int world = 1;
  std::vector<std::string> argv;                    // the worker command line
  std::vector<std::pair<std::string, std::string>> env;  // set in every worker
  std::function<std::string(int rank)> job;         // what Hello answers, per rank
  // Seconds a rank may spend in a phase, by phase name ("bootstrap" runs from the spawn to
  // the first phase event); phases not listed get budgets["default"].
  std::map<std::string, double> budgets;
  bool echo = false;  // copy ranks' output to stderr as it comes, prefixed [rank r]
  size_t keep_lines = 20;
  std::function<void(int rank, const std::string& phase, int trial)> on_phase;
};

enum class Outcome { Ok, Crash, Timeout, Interrupted };
const char* outcome_name(Outcome o);

struct RankReport {
  int rank = 0;
  pid_t pid = 0;
  std::string phase = "bootstrap";
  int trial = -1;
  int exit_code = -1;  // -1: still running or killed by the harness
  int signal = 0;      // the signal that ended it, when not the harness's SIGKILL
  bool killed = false; // ended by the harness
  std::string error_kind, error_message;  // from the rank's Error event
  std::string result;                     // the rank's Result (JSON), "" if none
  std::vector<std::string> last_lines;
  // Seconds from the spawn to the first time the rank entered each phase.
  std::map<std::string, double> entered_s;
};

struct GroupReport {
  Outcome outcome = Outcome::Ok;
  std::vector<int> culprits;  // the ranks that crashed or overran
  std::string summary;        // one line: what went wrong where
  std::vector<RankReport> ranks;
  double wall_s = 0;

  // A multi-line account for the user: summary, every rank's phase and fate, last lines.
  std::string details() const;
};

GroupReport run_group(const GroupOptions& options);

// "trial 3" or the phase name.
std::string phase_label(const std::string& phase, int trial);

}  // namespace pkb::launch
