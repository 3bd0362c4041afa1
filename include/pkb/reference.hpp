// The reference API: reference/<slug>.cpp implements a problem's behaviour in libtorch,
// one Reference per problem, registered under the problem's slug. The spec
// (problems/<slug>.toml) declares the inputs and outputs; pkb builds the declared inputs
// and the output tensors, calls run() on every rank and checks the outputs against the spec.
//
//   struct AllReduce : pkb::Reference {
//     void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
//       ctx.comm().all_reduce_into(out["y"], in["x"]);  // straight into the output: no copy
//     }
//   };
//   PKB_REFERENCE("coll_allreduce", AllReduce);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/scalar_tensor.h>

#include "pkb/comm.hpp"

namespace pkb {

// A problem's inputs on one rank, in spec order, by name.
class Inputs {
 public:
  void add(const std::string& name, at::Tensor t);
  const at::Tensor& operator[](const std::string& name) const;
  at::Tensor& operator[](const std::string& name);
  const at::Tensor& at(size_t i) const { return tensors_.at(i); }
  at::Tensor& at(size_t i) { return tensors_.at(i); }
  size_t size() const { return tensors_.size(); }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<at::Tensor>& tensors() const { return tensors_; }
  std::vector<at::Tensor>& tensors() { return tensors_; }
  Inputs clone() const;  // deep copy

 private:
  std::vector<std::string> names_;
  std::vector<at::Tensor> tensors_;
};

// A call's outputs on one rank, in spec order, by name: tensors pkb made at the shapes the
// spec declares (a data-dependent dim, `<=` in the spec, at its upper bound), on the rank's
// device or the host as declared. run() writes its results into them: in place (at::*_out,
// the communicator's *_into, copy_ of a last step) or through set(). A candidate rank hands
// the reference pkb's own output buffers here, exactly as it hands them to a candidate, so
// the reference timed as the baseline does the work a candidate must do and nothing more:
// a reference that writes in place pays no copy; one that sets a tensor it made pays one,
// as a candidate that computed elsewhere would.
class Outputs {
 public:
  // `dynamic`: which dims of the slot are data-dependent (may come out smaller).
  void add(const std::string& name, at::Tensor slot, std::vector<bool> dynamic);
  size_t size() const { return slots_.size(); }
  const std::vector<std::string>& names() const { return names_; }
  // The slot of an output, to write in place (at its declared shape).
  at::Tensor& operator[](const std::string& name);
  at::Tensor& at(size_t i) { return slots_.at(i); }
  // Output i is `y`: copied into its slot (nothing to do where y is the slot itself), a
  // data-dependent dim taking y's size. Throws std::runtime_error, naming the spec's
  // declaration, where y's type, place or shape does not fit it.
  void set(size_t i, const at::Tensor& y);
  void set(const std::string& name, const at::Tensor& y);
  void set(const std::vector<at::Tensor>& ys);  // every output, in spec order
  // The size of a data-dependent dim of output i that run() wrote in place.
  void set_size(size_t i, int64_t dim, int64_t size);
  // What the call produced: the slots at the sizes set.
  std::vector<at::Tensor> results() const;
  const std::vector<int64_t>& sizes(size_t i) const { return sizes_.at(i); }
  // How many outputs set() copied in this object's life (0: all written in place).
  int copies() const { return copies_; }
  // Every size back at its capacity: a new call on the same slots.
  void reset_sizes();

 private:
  size_t index(const std::string& name) const;
  std::vector<std::string> names_;
  std::vector<at::Tensor> slots_;
  std::vector<std::vector<bool>> dynamic_;
  std::vector<std::vector<int64_t>> sizes_;
  int copies_ = 0;
};

// What a reference sees of the run.
class Ctx {
 public:
  virtual ~Ctx() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual int trial() const = 0;  // -1 in setup()
  virtual at::Device device() const = 0;
  virtual Comm& comm() = 0;  // every rank

  // Sizes and derived vars of the spec (M, N, K, ...), evaluated for this W and rank.
  virtual int64_t size(const std::string& name) const = 0;
  // Non-tensor arguments from the spec's [args].
  virtual int64_t arg_int(const std::string& name) const = 0;
  virtual double arg_float(const std::string& name) const = 0;
  virtual bool arg_bool(const std::string& name) const = 0;
  virtual std::string arg_str(const std::string& name) const = 0;
  virtual std::vector<int64_t> arg_list(const std::string& name) const = 0;

  // The problem's element type ("dt" in specs) and tensor options on this rank's device.
  virtual at::ScalarType dtype() const = 0;
  at::TensorOptions options(at::ScalarType t) const;
  at::TensorOptions options() const { return options(dtype()); }

  // Random streams of the current trial, drawn from the run's secret seed: rng() differs
  // by rank, shared_rng() is the same on every rank. Use them for custom inputs only.
  virtual at::Generator& rng() = 0;
  virtual at::Generator& shared_rng() = 0;
};

// Every rank's inputs of one call, as they were drawn: what a check (Reference::check) may
// read, other ranks' data included.
class CallInputs {
 public:
  virtual ~CallInputs() = default;
  // Rank `rank`'s inputs (this rank's too). pkb may draw them again from the run's seed,
  // as that rank drew them, when first asked for: make_inputs must not communicate.
  virtual const Inputs& of(int rank) const = 0;
};

class Reference {
 public:
  virtual ~Reference() = default;
  // Once per run, before the first trial, on every rank: build sub-communicators here.
  virtual void setup(Ctx&) {}
  // After pkb has built the declared inputs of a trial: fill those declared with
  // init = "custom", or derive inputs from others. Shapes must stay as declared.
  virtual void make_inputs(Ctx&, Inputs&) {}
  // The problem's behaviour, written into `out` (every element of every output). Must not
  // change the inputs that the spec declares read-only.
  virtual void run(Ctx& ctx, const Inputs& in, Outputs& out) = 0;
  // For an output whose spec declares `ties` (a choice among equal keys: the labels of a
  // top-k, a position in a sort), called when the candidate's output differs from the
  // reference's. Returns a bool tensor shaped like that output, true where the candidate's
  // element is no valid choice. Judge a choice by the key it selects (an equal similarity,
  // an equal sort key), never by its position. `got` and `want` are the candidate's and the
  // reference's outputs of the call in spec order (dtypes and shapes already match),
  // `inputs` every rank's inputs of the call; nothing else, and no communicator: pkb may run
  // this apart from the ranks. The default has no check (an undefined tensor).
  virtual at::Tensor check(const Ctx& /*ctx*/, size_t /*output*/, const CallInputs& /*inputs*/,
                           const std::vector<at::Tensor>& /*got*/, const std::vector<at::Tensor>& /*want*/) const {
    return {};
  }
};

// x / d as IEEE division on every device. On CUDA, `tensor / scalar` is computed as
// tensor * (1 / scalar), which can be one ulp off the quotient: a quantizer whose spec says
// "an fp32 division" then puts codes at rounding boundaries one step away.
inline at::Tensor divide_exactly(const at::Tensor& x, double d) {
  return x.div(at::scalar_tensor(d, x.options()));
}

using ReferenceFactory = std::unique_ptr<Reference> (*)();
bool register_reference(const char* slug, ReferenceFactory factory);

}  // namespace pkb

// Named by __COUNTER__, not __LINE__: references are compiled several to a translation unit
// (src/CMakeLists.txt), where two could register on the same line number. The slug, a string
// literal, is also written into the shared object's `pkb_references` section, where the pkb
// parent reads which references a library holds without loading it, or libtorch
// (run/rank_library.cpp).
#define PKB_REFERENCE_CAT2(a, b) a##b
#define PKB_REFERENCE_CAT(a, b) PKB_REFERENCE_CAT2(a, b)
#define PKB_REFERENCE(slug, Class)                                                                      \
  static const char PKB_REFERENCE_CAT(pkb_reference_slug_, __COUNTER__)[]                              \
      __attribute__((used, section("pkb_references"))) = slug;                                          \
  static const bool PKB_REFERENCE_CAT(pkb_registered_, __COUNTER__) = ::pkb::register_reference(         \
      slug, []() -> std::unique_ptr<::pkb::Reference> { return std::make_unique<Class>(); })
