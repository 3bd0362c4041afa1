// Starts one worker process per rank (spawn.hpp) and supervises them until all finish or
// one fails: serves the bootstrap channel (its store, store.hpp), keeps the last lines each
// rank printed, enforces a deadline on every phase a rank announces (phases.hpp), and on a
// crash or an overrun kills the whole group at once and says which rank was the cause.
// The parent never touches CUDA, NVML or NCCL itself.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

#include "launch/environment.hpp"
#include "launch/spawn.hpp"

namespace pkb::launch {

struct GroupOptions {
  int world = 1;
  std::vector<std::string> argv;                         // the worker command line
  // The fork server's command line (fork_server.hpp): the ranks forked from it, each
  // then running what `argv` would. Empty, or where it does not come up: each exec'd.
  std::vector<std::string> fork_server_argv;
  // Seconds the fork server may take to come up: loading pkb's rank library takes about a
  // second; importing torch for a .py candidate's ranks (`--python`) a few more.
  double fork_server_ready_s = 60;
  std::vector<std::pair<std::string, std::string>> env;  // pkb's own variables, set in every worker
  EnvPolicy env_policy;                                  // what else of the parent's environment passes
  bool scratch = true;   // a fresh folder for HOME and TMPDIR of the ranks, removed afterwards
  Limits limits;
  std::function<std::string(int rank)> job;  // what Hello answers, per rank
  // Seconds a rank may spend in a phase, by phase name (phase::kBootstrap runs from the
  // spawn to the first phase event); phases not listed get budgets["default"].
  std::map<std::string, double> budgets;
  bool echo = false;  // copy ranks' output to stderr as it comes, prefixed [rank r]
  size_t keep_lines = 20;
  std::function<void(int rank, const std::string& phase, int trial, const std::string& problem)> on_phase;
  // What a process is called in messages ("candidate rank 1"); "rank r" when unset.
  std::function<std::string(int rank)> name_of;
  // Whether a process may write (set, add, delete, hand over a descriptor) a store key;
  // every write when unset. A refused write is not made, is answered as if it were, and is
  // recorded in the process's report (RankReport::refused_key).
  std::function<bool(int rank, const std::string& key)> may_write;
  // Store keys whose first write is timestamped in the writer's report (RankReport::key_s).
  std::function<bool(const std::string& key)> timestamp_key;
};

enum class Outcome { Ok, Crash, Timeout, Interrupted };
const char* outcome_name(Outcome o);

struct RankReport {
  int rank = 0;
  pid_t pid = 0;
  std::string phase = "bootstrap";
  int trial = -1;
  std::string problem;  // of a rank that runs several problems in turn: the one at hand
  int exit_code = -1;  // -1: still running or killed by the harness
  int signal = 0;      // the signal that ended it, when not the harness's SIGKILL
  bool killed = false; // ended by the harness
  std::string error_kind, error_message;  // from the rank's Error event
  std::string result;                     // the rank's first Result (JSON), "" if none
  int results = 0;                        // Result events received (pkb's rank sends one)
  std::vector<std::string> parts;         // Part events: problems' reports, in the order they ended
  std::vector<std::string> last_lines;
  // Seconds from the spawn to the first time the rank entered each phase.
  std::map<std::string, double> entered_s;
  // Every phase event in order: phase, trial, seconds from the spawn.
  struct Step {
    std::string phase;
    int trial = -1;
    double s = 0;
    std::string problem;  // of a rank that runs several problems: the one at hand ("" else)
  };
  std::vector<Step> history;
  std::string refused_key;  // the first store write the options' may_write refused
  int refused_writes = 0;
  std::map<std::string, double> key_s;  // timestamped keys (GroupOptions::timestamp_key): seconds from the spawn
  std::string name;                     // GroupOptions::name_of, or "rank r"
};

struct GroupReport {
  Outcome outcome = Outcome::Ok;
  std::vector<int> culprits;  // the ranks that crashed or overran
  std::string summary;        // one line: what went wrong where
  std::vector<RankReport> ranks;
  double wall_s = 0;
  int leftovers_ended = 0;    // processes the ranks left behind, ended by pkb
  bool forked = false;        // the ranks came from the fork server (GroupOptions::fork_server_argv)
  std::string fork_server_failed;  // why a fork server asked for did not serve (the ranks were exec'd)

  // A multi-line account for the user: summary, every rank's phase and fate, last lines.
  std::string details() const;
};

GroupReport run_group(const GroupOptions& options);

// The part of a group's report about one of the problems its ranks ran in turn: each
// rank's phase events of that problem (their times, and the phases entered), and `results`
// (one per rank: what it said of that problem, "" for nothing) in place of its result. A
// problem every rank reported on finished, whatever happened to the group after it; else
// the outcome is the group's (a group that failed failed in some problem, which its
// summary names).
GroupReport for_problem(const GroupReport& rep, const std::string& problem, const std::vector<std::string>& results);

// "trial 3" or the phase name, with " of <problem>" when there is one.
std::string phase_label(const std::string& phase, int trial, const std::string& problem = "");

}  // namespace pkb::launch
