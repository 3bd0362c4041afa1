// Comparing a candidate's output with the reference's: dtype, shape, then values within
// atol + rtol * |reference| (exact for integers and bool; NaN only where the reference has
// NaN; complex numbers compare both parts).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
// where the reference has a number never passes.
Mismatch compare(const at::Tensor& got, const at::Tensor& want, double atol, double rtol, int64_t allowed = 0);
// The same within the output's tolerances (the spec's, else its dtype's defaults) and its
// mismatch allowance.
Mismatch compare_output(const spec::TensorSpec& output, const at::Tensor& got, const at::Tensor& want);

// Fills an output before a candidate call: NaN for floating types; for integers and bool a
// value that alternates with `flip` between the type's extremes, so an element left
// unwritten fails in some trial whatever the reference holds there.
void poison(const at::Tensor& t, bool flip);

}  // namespace pkb::eval
