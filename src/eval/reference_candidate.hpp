// The problem's own C++ reference run in a candidate rank through everything a candidate
// goes through (the harness's buffers, the gate, the judge's clock): the baseline that pkb
// eval times beside every candidate (jobs/eval_candidate.cpp), and `pkb eval --solution
// @reference`, where it is the candidate too (poisoned outputs, captures, the judges'
// comparisons, the sandbox): a sanity run of pkb, as `pkb validate` is. The two are the same
// code on the same path, so @reference must come out correct at a speedup of 1.0.
#pragma once

#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "eval/candidate.hpp"
#include "pkb/comm.hpp"
#include "spec/spec.hpp"

namespace pkb::eval {

// How the reference hands over its outputs. `into_outputs`: it writes into pkb's output
// buffers, as a candidate of the C ABI does (a reference that writes in place pays no
// copy). `copied`: it writes into tensors of its own, which are then copied into pkb's
// buffers, as a candidate that returns its results (the original ParallelKernelBench's
// `solution(*inputs)`) is charged: the baseline for such a candidate pays what it pays.
enum class ReferenceForm { into_outputs, copied };

class ReferenceCandidate : public Candidate {
 public:
  // How its calls hand over their outputs from now on (the candidate's kind is known once
  // it is loaded, after the reference is set up).
  virtual void set_form(ReferenceForm form) = 0;
};

// The reference of `spec` as a candidate on this rank, set up (its sub-communicators made)
// over `comm` now: construct it before the sandbox, which denies the sockets a new NCCL
// communicator opens. `comm` must outlive it.
std::unique_ptr<ReferenceCandidate> make_reference_candidate(const spec::ProblemSpec& spec, const std::string& size,
                                                             int world, int rank, at::Device device, at::ScalarType dt,
                                                             Comm& comm);

}  // namespace pkb::eval
