// What every problem job of a rank (dryrun, eval, validate) shares, built once from the
// job: the spec, what dt stands for, the Ctx references see and the reference itself,
// set up (its sub-communicators made) over the given communicator.
#pragma once

#include <memory>

#include "rank/rank.hpp"
#include "ref/context.hpp"
#include "spec/spec.hpp"

namespace pkb::jobs {

struct ProblemContext {
  // `comm`: the references' communicator (nullptr: the rank's own).
  explicit ProblemContext(rank::Rank& r, Comm* comm = nullptr);

  rank::Rank& rank;
  spec::ProblemSpec spec;
  at::ScalarType dt;
  ref::RefCtx ctx;
  std::unique_ptr<Reference> reference;

  // A trial's fresh inputs (ctx.begin_trial(key) first).
  Inputs inputs_for(int64_t key);
  // Runs the reference and checks its outputs against the spec; given `pristine` (a copy of
  // `in` from before the call), the read-only inputs must come back equal to it (the
  // reference is pkb's: a failure there is a bug in it). Dryrun and validate check it with
  // the copy they keep anyway; a judge spares the copy of a large problem's inputs.
  std::vector<at::Tensor> run_reference(Inputs& in, const Inputs* pristine = nullptr);
};

}  // namespace pkb::jobs
