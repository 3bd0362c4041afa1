// The phases a rank announces (Client::phase) and the parent keeps a deadline for, named
// once for both sides.
#pragma once

namespace pkb::launch::phase {

inline constexpr char kBootstrap[] = "bootstrap";  // from the spawn to the rank's first event
inline constexpr char kInit[] = "init";            // device, communicators, heap, pkb_init
inline constexpr char kInterpreter[] = "interpreter";  // a .py candidate's Python, torch and Triton start
inline constexpr char kTrial[] = "trial";          // one correctness trial (with its number)
inline constexpr char kSync[] = "sync";            // done with a trial, waiting for the others
// pkb eval: a candidate rank waits for its judge's next step (inputs, a decision); a judge
// rank waits for its candidate rank's.
inline constexpr char kAwaitJudge[] = "await_judge";
inline constexpr char kAwaitCandidate[] = "await_candidate";
// pkb eval: a judge rank through its candidate rank's timed call n (with n as the trial),
// the candidate's or the reference's: it waits on the candidate rank, and the progress
// line counts the calls.
inline constexpr char kTimedCall[] = "timed_call";
inline constexpr char kSave[] = "save";            // writing outputs
// pkb eval: a judge measures what its gate costs on pkb's own empty calls (jobs/gate.hpp).
inline constexpr char kCalibration[] = "calibration";
inline constexpr char kTimingSetup[] = "timing_setup";
inline constexpr char kCandidateWarmup[] = "candidate_warmup";  // the candidate's, then the reference's again
inline constexpr char kCandidateTiming[] = "candidate_timing";  // the timed rounds of both sides
inline constexpr char kEscapeCheck[] = "escape_check";
// The reference alone (dryrun --time; in pkb eval its baseline, before the candidate is loaded).
inline constexpr char kReferenceWarmup[] = "reference_warmup";
inline constexpr char kReferenceTiming[] = "reference_timing";
inline constexpr char kTimingChecks[] = "timing_checks";  // the timed calls' outputs checked
inline constexpr char kFinish[] = "finish";
inline constexpr char kExit[] = "exit";  // the result is in; the rank is exiting

// Phases in which a rank only waits for others: never the cause of a timeout while some
// rank overruns a phase of real work.
inline constexpr const char* kWaitingPhases[] = {kSync, kAwaitJudge, kAwaitCandidate, kTimedCall};

// The phases of timing, which run hundreds of calls.
inline constexpr const char* kTimingPhases[] = {kTimingSetup,     kCandidateWarmup, kCandidateTiming, kEscapeCheck,
                                                kReferenceWarmup, kReferenceTiming, kTimingChecks};

}  // namespace pkb::launch::phase
