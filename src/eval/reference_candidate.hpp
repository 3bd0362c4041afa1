// `pkb eval --solution @reference`: the problem's own C++ reference run as the candidate, in
// the candidate ranks, through everything a candidate goes through (the harness's buffers,
// poisoned outputs, captures, the judges' comparisons, the sandbox, the timing). A sanity
// run of pkb itself, as `pkb validate` is: a correct answer must be called correct, and the
// same code must time the same on both sides (speedup about 1.0).
#pragma once

#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "eval/candidate.hpp"
#include "pkb/comm.hpp"
#include "spec/spec.hpp"

namespace pkb::eval {

// The reference of `spec` as a candidate on this rank, set up (its sub-communicators made)
// over `comm` now: construct it before the sandbox, which denies the sockets a new NCCL
// communicator opens. `comm` must outlive it. Its calls copy the reference's outputs into
// pkb's output buffers (a reference returns tensors of its own): the one cost it pays that
// the reference timed by the judges does not.
std::unique_ptr<Candidate> make_reference_candidate(const spec::ProblemSpec& spec, const std::string& size, int world,
                                                    int rank, at::Device device, at::ScalarType dt, Comm& comm);

}  // namespace pkb::eval
