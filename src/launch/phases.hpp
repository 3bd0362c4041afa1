// The phases a rank announces (Client::phase) and the parent keeps a deadline for, named
// once for both sides.
#pragma once

namespace pkb::launch::phase {

inline constexpr char kBootstrap[] = "bootstrap";  // from the spawn to the rank's first event
inline constexpr char kInit[] = "init";            // device, communicators, heap, pkb_init
inline constexpr char kInterpreter[] = "interpreter";  // a .py candidate's Python, torch and Triton start
inline constexpr char kTrial[] = "trial";          // one correctness trial (with its number)
inline constexpr char kSync[] = "sync";            // done with a trial, waiting for the others
inline constexpr char kSave[] = "save";            // writing outputs
inline constexpr char kTimingSetup[] = "timing_setup";
inline constexpr char kCandidateWarmup[] = "candidate_warmup";
inline constexpr char kCandidateTiming[] = "candidate_timing";
inline constexpr char kEscapeCheck[] = "escape_check";
inline constexpr char kReferenceWarmup[] = "reference_warmup";
inline constexpr char kReferenceTiming[] = "reference_timing";
inline constexpr char kTimingChecks[] = "timing_checks";  // the timed calls' outputs checked
inline constexpr char kFinish[] = "finish";
inline constexpr char kExit[] = "exit";  // the result is in; the rank is exiting

// The phases of timing, which run hundreds of calls.
inline constexpr const char* kTimingPhases[] = {kTimingSetup,     kCandidateWarmup, kCandidateTiming, kEscapeCheck,
                                                kReferenceWarmup, kReferenceTiming, kTimingChecks};

}  // namespace pkb::launch::phase
