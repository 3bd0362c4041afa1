// Starting a run's ranks and waiting for them, from the parent's side: every command that
// runs problems (dryrun, validate, selftest, eval) goes through here. The ranks' jobs are
// rank::Job; placement and deadlines are launch/'s. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "launch/group.hpp"
#include "launch/placement.hpp"
#include "rank/job.hpp"
#include "spec/spec.hpp"

namespace pkb::run {

// How ranks are started, whatever the command: what the flags of every command that
// starts ranks say (cli/common.hpp's RunOptions fills it).
struct RankSettings {
  double timeout = 0;                       // seconds a phase may take (0: the spec's deadlines)
  bool echo = false;                        // every rank's output as it comes
  bool sandbox = true;                      // confine candidates (rank/sandbox.hpp)
  std::vector<std::string> pass_env;        // variables that pass into the ranks on purpose
  std::vector<std::string> deny_env;        // never into a rank (models.toml's key variables)
  std::vector<std::string> reference_libs;  // loaded by every rank
  bool fork_server = true;                  // ranks forked from pkb's fork server, else each exec'd
};

// Starts the ranks with `job` (rank, world, device, gpu, comm and reference libraries are
// filled in per rank) and waits, under the deadlines of `deadlines_of` at the job's size.
// `label` names the run on the progress line (stderr, on a terminal). With `judged` (pkb
// eval), 2 W processes: W judge ranks, then W candidate ranks, candidate rank r beside
// judge r on its GPU; each kind may write only its own store keys.
launch::GroupReport run_ranks(const launch::Placement& p, const RankSettings& s, const rank::Job& job,
                              const spec::ProblemSpec* deadlines_of, const std::string& label, bool judged = false);

// The exit code for a failed group (crash, timeout, interrupt).
int exit_for(const launch::GroupReport& r);

}  // namespace pkb::run
