// The reference runtime: the Ctx a reference sees on a rank (sizes, args, its communicator,
// seeded random streams), the declared inputs of a trial, and the check that a reference's
// outputs match its spec. Implements include/pkb/reference.hpp.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "pkb/reference.hpp"
#include "spec/spec.hpp"

namespace pkb::ref {

class RefCtx : public Ctx {
 public:
  RefCtx(const spec::ProblemSpec& spec, spec::Vars vars, at::Device device, at::ScalarType dt, Comm* comm,
         uint64_t seed);

  // Re-seeds rng() and shared_rng() for trial t (-1: setup).
  void begin_trial(int t);
  void set_comm(Comm* c) { comm_ = c; }
  const spec::Vars& vars() const { return vars_; }
  const spec::ProblemSpec& spec() const { return spec_; }

  int rank() const override { return static_cast<int>(vars_.at("rank")); }
  int world() const override { return static_cast<int>(vars_.at("W")); }
  int trial() const override { return trial_; }
  at::Device device() const override { return device_; }
  Comm& comm() override;
  int64_t size(const std::string& name) const override;
  int64_t arg_int(const std::string& name) const override;
  double arg_float(const std::string& name) const override;
  bool arg_bool(const std::string& name) const override;
  std::string arg_str(const std::string& name) const override;
  std::vector<int64_t> arg_list(const std::string& name) const override;
  at::ScalarType dtype() const override { return dt_; }
  at::Generator& rng() override { return rng_; }
  at::Generator& shared_rng() override { return shared_rng_; }

  // The inputs rank `rank` draws for call `key` (trial number or timed-call key), built here
  // with a Ctx of that rank that has no communicator.
  Inputs inputs_of(int rank, int64_t key, Reference& ref) const;

 private:
  const spec::ArgValue& arg(const std::string& name) const;

  const spec::ProblemSpec& spec_;
  spec::Vars vars_;
  at::Device device_;
  at::ScalarType dt_;
  Comm* comm_;
  uint64_t seed_;
  int trial_ = -1;
  at::Generator rng_, shared_rng_;
};

// The declared inputs of the current trial, then the reference's make_inputs.
Inputs build_inputs(RefCtx& ctx, Reference& ref);

// Every rank's inputs of call `key` as drawn (not what a reference or candidate left in
// them): drawn again from the run's seed when first asked for, so a comparison that needs
// none costs nothing.
class DrawnInputs : public CallInputs {
 public:
  DrawnInputs(const RefCtx& ctx, Reference& ref, int64_t key) : ctx_(ctx), ref_(ref), key_(key) {}
  const Inputs& of(int rank) const override;

 private:
  const RefCtx& ctx_;
  Reference& ref_;
  int64_t key_;
  mutable std::map<int, Inputs> drawn_;
};

// The outputs of a call as the spec declares them on this rank, each in a fresh tensor
// (capacity shapes, on the device or the host as declared): where a judge's reference writes.
Outputs make_outputs(const RefCtx& ctx);
// Outputs over tensors that exist already (pkb's buffers in a candidate rank), in spec order.
Outputs outputs_over(const spec::ProblemSpec& spec, const std::vector<at::Tensor>& slots);

}  // namespace pkb::ref
