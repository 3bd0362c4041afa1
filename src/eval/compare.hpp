// Comparing a candidate's output with the reference's: dtype, shape, then values within
// atol + rtol * |reference| (exact for integers and bool; NaN only where the reference has
// NaN; complex numbers compare both parts). Outputs that are choices among equal keys (the
// spec's `ties`) are judged by the keys chosen, through the reference's check().
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pkb/reference.hpp"
#include "spec/spec.hpp"

namespace pkb::eval {

struct Mismatch {
  bool ok = true;
  std::string reason;  // dtype, shape, values, nan
  std::string detail;  // one line for people
  double max_abs = 0, max_rel = 0;
  int64_t bad = 0;
  std::vector<int64_t> first_index;
  nlohmann::json to_json() const;
};

// Up to `allowed` elements may lie outside atol/rtol (still counted in `bad`); a NaN
// where the reference has a number never passes. With `explain` false a mismatch carries
// only ok, reason and bad, not the errors and first index that `detail` spells out: for
// asking again and again whether an output has become right.
Mismatch compare(const at::Tensor& got, const at::Tensor& want, double atol, double rtol, int64_t allowed = 0,
                 bool explain = true);
// The same within the output's tolerances (the spec's, else its dtype's defaults) and its
// mismatch allowance.
Mismatch compare_output(const spec::TensorSpec& output, const at::Tensor& got, const at::Tensor& want,
                        bool explain = true);

// What judging a `ties` output takes (spec: ties): the reference, whose check() decides, the
// Ctx of this rank, and every rank's inputs of the call.
struct TieJudge {
  const Reference& reference;
  const Ctx& ctx;
  const CallInputs& inputs;
};

// Output i of a call (`got`, `want`: all its outputs, in spec order) as compare_output
// judges it; when values differ and the spec declares `ties` for the output, the
// reference's check decides element by element which differences are valid choices (an
// answer that breaks ties another way passes; `bad` then counts the invalid choices only).
// Throws std::runtime_error when the reference has no check or its answer does not fit.
Mismatch compare_output(const spec::TensorSpec& output, size_t i, const std::vector<at::Tensor>& got,
                        const std::vector<at::Tensor>& want, const TieJudge& ties, bool explain = true);

// Fills an output before a candidate call: NaN for floating types; for integers and bool a
// value that alternates with `flip` between the type's extremes, so an element left
// unwritten fails in some trial whatever the reference holds there.
void poison(const at::Tensor& t, bool flip);

}  // namespace pkb::eval
