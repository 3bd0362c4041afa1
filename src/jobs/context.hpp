// What every problem job of a rank (dryrun, eval, validate) shares, built once from the
// job: the spec, what dt stands for, the Ctx references see and the reference itself,
// set up (its sub-communicators made) over the given communicator.
#pragma once

#include <memory>

#include "rank/rank.hpp"
#include "ref/context.hpp"
#include "spec/spec.hpp"

namespace pkb::jobs {

// What one call of the reference made: its outputs, at the sizes it set, and how many of
// them it copied into their slots (Outputs::copies: 0 where it wrote every one in place).
struct ReferenceOutputs {
  std::vector<at::Tensor> outputs;
  int copies = 0;
};

struct ProblemContext {
  // The problem of the spec at `spec_path`; `comm`: the references' communicator (nullptr:
  // the rank's own).
  ProblemContext(rank::Rank& r, const std::string& spec_path, Comm* comm = nullptr);

  rank::Rank& rank;
  spec::ProblemSpec spec;
  at::ScalarType dt;
  ref::RefCtx ctx;
  std::unique_ptr<Reference> reference;

  // A trial's fresh inputs (ctx.begin_trial(key) first).
  Inputs inputs_for(int64_t key);
  // Runs the reference into fresh outputs (their shapes and types are the spec's: ref::
  // Outputs checks what it is given); given `pristine` (a copy of `in` from before the
  // call), the outputs start poisoned, so an element it never writes shows, and the
  // read-only inputs must come back equal to it (the reference is pkb's: a failure there is
  // a bug in it). Dryrun and validate check it with the copy they keep anyway; a judge
  // spares the copy of a large problem's inputs.
  ReferenceOutputs run_reference(Inputs& in, const Inputs* pristine = nullptr);
  // Where this problem's saved outputs go: the job's save_dir, or its <slug>/
  // (job.save_by_problem); "" when nothing is saved.
  std::string save_dir() const;
  // Writes this rank's outputs y and the inputs they came from (rank_<r>.pt and
  // rank_<r>_inputs.pt, plain torch.load) under save_dir().
  void save(const Inputs& in, const std::vector<at::Tensor>& y) const;
};

}  // namespace pkb::jobs
