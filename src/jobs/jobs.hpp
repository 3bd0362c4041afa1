// The jobs a rank runs, one a mode (rank/job.hpp), each returning this rank's part of the
// result as JSON for the parent (launch/group.hpp collects them; the commands read them).
#pragma once

#include <nlohmann/json.hpp>

#include "launch/fork_server.hpp"
#include "rank/rank.hpp"

namespace pkb::jobs {

// The reference on every rank for some trials; saves outputs and inputs when asked; with
// job.timing, times it as pkb eval's judges do.
nlohmann::json run_dryrun(rank::Rank& r);
// The runtime's own checks: communicator, heap, device barrier.
nlohmann::json run_selftest(rank::Rank& r);
// pkb eval's two kinds of rank: a judge (every call's inputs, the clock, the comparisons;
// eval_judge.cpp) and a candidate rank (the candidate, confined, and both sides' timed
// calls; eval_candidate.cpp). Each returns its eval::JudgeReport / CandidateReport.
nlohmann::json run_judge(rank::Rank& r);
nlohmann::json run_candidate(rank::Rank& r);
// Whether an all-zero answer, the inputs passed through, and the reference without
// communication each fail the problem's comparison on this rank; saves the reference's
// outputs and inputs of trial 0 when asked. Dryrun and validate run the job's problems in
// turn and return {"problems": [one result each]}.
nlohmann::json run_validate(rank::Rank& r);

// What a rank of `job` does before it sets up its device (rank::Rank): pkb eval's two kinds
// of rank keep to their own store keys. Nothing for the other jobs.
void before_setup(const rank::Job& job, launch::Client& client);

// What the fork server does before it forks any rank (launch/fork_server.hpp): for a .py
// candidate's ranks (`python`), torch imported once for them all, with the fork calls that
// keep the interpreter sound (eval::preload_python); nothing otherwise.
launch::ForkHooks before_forks(bool python);

// The job of r.job.mode. Throws on an unknown mode.
nlohmann::json run_job(rank::Rank& r);

}  // namespace pkb::jobs
