// A problem's specification, read from problems/<slug>.toml (docs/problem-spec.md
// describes every key). The spec is the single source for shapes, dtypes, tolerances,
// world-size constraints and rooflines; references and candidates are checked against it.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "io/input_error.hpp"
#include "spec/dtype.hpp"
#include "spec/expr.hpp"

namespace pkb::spec {

// An error in a spec file; what() reads "file:line: problem; fix". The TOML reader
// (io/toml_reader.hpp) throws its base, io::InputError.
struct SpecError : io::InputError {
  using io::InputError::InputError;
};

struct Dim {
  Expr size;
  bool dynamic = false;  // written "<= expr": the output's size along it depends on data
};

inline constexpr double kMaxMismatch = 0.01;

struct TensorSpec {
  std::string name;
  std::vector<Dim> shape;
  std::string dtype;      // a dtype name, or "dt" for the problem's element type
  Expr init;              // inputs: randn, uniform(a,b), randint(a,b), zeros, ones, full(v),
                          // arange, linspace(a,b), custom (the reference builds it)
  bool shared = false;    // inputs: the same values on every rank
  bool readonly = true;   // inputs: the candidate must leave it unchanged
  bool host = false;      // lives in host memory even on the CUDA device
  std::optional<double> atol, rtol;  // outputs; defaults by dtype
  // Outputs: the fraction of elements (rounded down to a count) that may lie outside
  // atol/rtol, never NaN, for answers with a few legitimately unstable elements (a ReLU
  // whose input rounds to either side of zero); at most kMaxMismatch.
  double mismatch = 0;
  // Outputs: how the output is a choice among equal keys (top-k labels, a position in a
  // sort), in words; non-empty: where the candidate's values differ from the reference's,
  // the reference's check() decides which are valid choices (include/pkb/reference.hpp).
  std::string ties;
  int line = 0;
};

using ArgValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

struct Arg {
  std::string name;
  ArgValue value;
};

struct Roofline {
  Expr nvlink_bytes;  // bytes one rank must move over NVLink (the larger of sent and received)
  Expr hbm_bytes;     // bytes one rank must read and write in its own HBM
  Expr flops;         // floating-point operations of one rank
  Expr data_bytes;    // collectives: the message size nccl-tests calls "size"
  Expr bus_factor;    // collectives: busbw = data_bytes / time * bus_factor
};

// How the original ParallelKernelBench called this problem's `solution`: what pkb passes an
// original-format candidate (docs/problem-spec.md, [original]) and how it reads the result.
struct OriginalCall {
  bool declared = false;             // the spec has an [original] table
  std::vector<std::string> args;     // positional arguments, each a small expression (below)
  std::vector<std::string> returns;  // output names in the order solution returns them ("_": dropped)
  std::string unsupported;           // why an original-format candidate cannot run here, or ""
};

struct ProblemSpec {
  std::string path;
  std::string slug;
  int id = 0;
  std::string stem;
  std::string category;  // short key: coll, dp, tp, cp, sp, ep, fsdp, pp, rec, gnn, sci, misc
  std::string origin;
  std::string description;
  std::string dtype = "bf16";
  int min_world = 1;
  int max_world = 64;
  std::vector<Expr> constraints;
  std::vector<std::pair<std::string, Expr>> vars;  // derived sizes, in dependency order
  std::map<std::string, std::map<std::string, int64_t>> sizes;  // size name ("default", "large") -> M, N, K...
  std::vector<TensorSpec> inputs, outputs;
  std::vector<Arg> args;
  Roofline roofline;
  // [memory] reference_peak: bytes the reference holds at its peak on a rank (its inputs,
  // outputs and working memory), a formula over the sizes, vars and dt_bytes; empty: pkb's
  // memory plan estimates it (eval/memory_plan.hpp). Declared where the estimate is far off.
  Expr reference_peak;
  double trial_timeout_s = 0;  // 0: sized by the harness
  OriginalCall original;       // [original]

  const TensorSpec* input(const std::string& name) const;
  const TensorSpec* output(const std::string& name) const;

  // Why W cannot run this problem at these sizes, or "" when it can.
  std::string world_size_error(int world, const std::string& size = "default") const;
  // One line: "1..8, 512 % W == 0".
  std::string world_size_summary() const;
  // M, N, K... of a size: a named one ("large"), a named one with some sizes replaced
  // ("large:M=4096,N=512"), or replacements of the default ("M=4096"). Throws
  // SpecError naming the sizes there are.
  std::map<std::string, int64_t> size_values(const std::string& size) const;
  // size_values(size), W, rank and the derived vars. Throws SpecError.
  Vars vars_for(const std::string& size, int world, int rank) const;
  // Another rank's vars from one rank's (vars_for's result): rank replaced, derived vars
  // evaluated again.
  Vars vars_at_rank(Vars v, int rank) const;
  // vars_for and dt_bytes, the bytes of one element of `dtype` (what dt stands for in this
  // run; "" for the spec's own): what roofline formulas see.
  Vars roofline_vars(const std::string& size, int world, int rank, const std::string& dtype) const;
};

// Reads and checks one spec file. Throws SpecError.
ProblemSpec load_spec(const std::string& path);

// The shape of a declared tensor; dynamic dims ("<= expr") give their capacity. Throws
// std::invalid_argument for a negative size.
std::vector<int64_t> shape_of(const TensorSpec& t, const Vars& vars);
// Its element type: the tensor's own, or `dt` (the run's element type) where it says "dt".
DType dtype_of(const TensorSpec& t, const std::string& dt);
// Its bytes: elements of shape_of times the element size.
size_t bytes_of(const TensorSpec& t, const Vars& vars, const std::string& dt);

// The long name of a category key ("tp" -> "Tensor Parallel"), "" when unknown.
std::string category_name(const std::string& key);
const std::vector<std::string>& category_keys();

}  // namespace pkb::spec
