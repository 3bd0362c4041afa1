// The rank side of `pkb eval` and `pkb validate` (the parent side is cli/cmd_eval.cpp).
#pragma once

#include <nlohmann/json.hpp>

namespace pkb::worker {
struct Rank;
}

namespace pkb::eval {

// Correctness trials, then timing of candidate and reference, then the checks of every
// timed call's outputs. Returns this rank's part of the result (see eval_job.cpp).
nlohmann::json run_eval(worker::Rank& r);

// Whether an all-zero answer, the inputs passed through, and the reference without
// communication each fail the problem's comparison on this rank.
nlohmann::json run_validate(worker::Rank& r);

}  // namespace pkb::eval
