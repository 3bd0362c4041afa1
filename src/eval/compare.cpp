#include "eval/compare.hpp"

#include <ATen/ATen.h>

#include <limits>
#include <sstream>

#include "spec/dtype.hpp"
#include "tensor/dtypes.hpp"
#include "tensor/init.hpp"

namespace pkb::eval {

nlohmann::json Mismatch::to_json() const {
  return {{"reason", reason},  {"detail", detail}, {"max_abs_err", max_abs},
          {"max_rel_err", max_rel}, {"bad_count", bad}, {"first_bad_index", first_index}};
}

namespace {

std::vector<int64_t> unravel(int64_t flat, c10::IntArrayRef shape) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return idx;
}

std::string value_str(const at::Tensor& x) {
  std::ostringstream s;
  if (x.is_complex()) s << x.to(at::kComplexDouble).item<c10::complex<double>>();
  else if (x.scalar_type() == at::kBool) s << (x.item<bool>() ? "true" : "false");
  else s << x.to(at::kDouble).item<double>();
  return s.str();
}

// The first element `bad` marks, its index into m.first_index; "got ..., want ..." there.
std::string first_bad(Mismatch& m, const at::Tensor& bad, const at::Tensor& got, const at::Tensor& want) {
  // argmax gives the first of equal maxima: the first bad element, without listing them all.
  int64_t first = bad.reshape({-1}).to(at::kByte).argmax().item<int64_t>();
  m.first_index = unravel(first, got.sizes());
  return "first at " + tensor::shape_str(m.first_index) + ": got " + value_str(got.reshape({-1})[first].cpu()) +
         ", want " + value_str(want.reshape({-1})[first].cpu());
}

}  // namespace

Mismatch compare(const at::Tensor& got, const at::Tensor& want, double atol, double rtol, int64_t allowed,
                 bool explain) {
  Mismatch m;
  if (got.scalar_type() != want.scalar_type()) {
    m.ok = false;
    m.reason = "dtype";
    m.detail = std::string("dtype ") + c10::toString(got.scalar_type()) + ", reference " +
               c10::toString(want.scalar_type());
    return m;
  }
  if (got.sizes() != want.sizes()) {
    m.ok = false;
    m.reason = "shape";
    m.detail = "shape " + tensor::shape_str(got.sizes()) + ", reference " + tensor::shape_str(want.sizes());
    return m;
  }
  if (got.numel() == 0) return m;
  at::Tensor g = got, w = want.to(got.device());
  bool exact = !(at::isFloatingType(g.scalar_type()) || at::isComplexType(g.scalar_type()));
  // Bitwise-equal outputs (the common case for exact problems) need no arithmetic; NaN is
  // never equal to itself, so outputs holding NaN take the long way.
  if (g.equal(w)) return m;
  at::Tensor bad, gw, ww;
  if (exact) {
    bad = g.ne(w);
  } else {
    // fp32 holds every fp16/bf16/fp8 value exactly; 64-bit types compare in fp64.
    at::ScalarType wide = (g.scalar_type() == at::kDouble || g.scalar_type() == at::kComplexDouble) ? at::kDouble : at::kFloat;
    gw = (g.is_complex() ? at::view_as_real(g) : g).to(wide);
    ww = (w.is_complex() ? at::view_as_real(w) : w).to(wide);
    // |got - want| <= atol + rtol * |want|; infinities must match; NaN passes only on NaN.
    bad = at::isclose(gw, ww, rtol, atol, /*equal_nan=*/true).logical_not();
    if (g.is_complex()) bad = bad.any(-1);
  }
  m.bad = bad.sum().item<int64_t>();
  if (m.bad == 0) return m;
  if (!exact && (gw.isnan() & ww.isnan().logical_not()).any().item<bool>()) m.reason = "nan";
  if (m.bad <= allowed && m.reason.empty()) return m;
  m.ok = false;
  if (m.reason.empty()) m.reason = "values";
  if (!explain) return m;
  if (!exact) {
    at::Tensor finite = ww.isfinite() & gw.isfinite();
    at::Tensor diff = at::where(finite, (gw - ww).abs().to(at::kDouble), at::zeros({}, gw.options().dtype(at::kDouble)));
    m.max_abs = diff.max().item<double>();
    at::Tensor denom = ww.abs().to(at::kDouble);
    m.max_rel = at::where(finite & ww.ne(0), diff / denom, at::zeros_like(diff)).max().item<double>();
  }
  std::ostringstream os;
  os << m.bad << " of " << got.numel() << " elements differ";
  if (allowed > 0) os << " (" << allowed << " may)";
  os << "; " << first_bad(m, bad, got, want);
  if (!exact && m.max_abs > 0) os << "; max abs error " << m.max_abs << ", max rel error " << m.max_rel;
  if (m.reason == "nan") os << " (NaN where the reference has a number: unwritten output, or a NaN computed)";
  m.detail = os.str();
  return m;
}

void poison(const at::Tensor& t, bool flip) {
  if (t.numel() == 0) return;
  at::ScalarType s = t.scalar_type();
  if (at::isFloatingType(s) || at::isComplexType(s)) {
    t.fill_(std::numeric_limits<double>::quiet_NaN());
  } else if (s == at::kBool) {
    t.fill_(flip);
  } else {
    // The extremes of the type, via int64 to reach them exactly.
    int64_t lo, hi;
    switch (s) {
      case at::kByte: lo = 0, hi = 255; break;
      case at::kChar: lo = -128, hi = 127; break;
      case at::kShort: lo = -32768, hi = 32767; break;
      case at::kInt: lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max(); break;
      default: lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max(); break;
    }
    t.fill_(flip ? hi : lo);
  }
}

Mismatch compare_output(const spec::TensorSpec& o, const at::Tensor& got, const at::Tensor& want, bool explain) {
  spec::DType d = tensor::from_aten(want.scalar_type());
  auto allowed = static_cast<int64_t>(o.mismatch * static_cast<double>(want.numel()));
  return compare(got, want, o.atol.value_or(spec::default_atol(d)), o.rtol.value_or(spec::default_rtol(d)), allowed,
                 explain);
}

Mismatch compare_output(const spec::TensorSpec& o, size_t i, const std::vector<at::Tensor>& got,
                        const std::vector<at::Tensor>& want, const TieJudge& ties, bool explain) {
  Mismatch m = compare_output(o, got.at(i), want.at(i), explain);
  if (m.ok || o.ties.empty() || m.reason != "values") return m;
  at::Tensor invalid = ties.reference.check(ties.ctx, i, ties.inputs, got, want);
  if (!invalid.defined())
    throw std::runtime_error("the reference has no check() for output '" + o.name +
                             "', whose spec declares ties; add one (include/pkb/reference.hpp) or drop ties");
  if (invalid.scalar_type() != at::kBool || invalid.sizes() != got[i].sizes())
    throw std::runtime_error("the reference's check() for output '" + o.name + "' returned " +
                             c10::toString(invalid.scalar_type()) + tensor::shape_str(invalid.sizes()) +
                             "; it must be bool, shaped like the output " + tensor::shape_str(got[i].sizes()));
  Mismatch t;
  t.bad = invalid.sum().item<int64_t>();
  if (t.bad == 0) return t;
  t.ok = false;
  t.reason = "values";
  if (!explain) return t;
  t.detail = std::to_string(t.bad) + " of " + std::to_string(got[i].numel()) +
             " elements are not among the valid choices (ties: " + o.ties + "); " +
             first_bad(t, invalid.to(got[i].device()), got[i], want[i]) + " (the reference's choice)";
  return t;
}

}  // namespace pkb::eval
