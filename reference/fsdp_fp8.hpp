// Shared by fsdp_fp8_reducescatter_grads and fsdp_fp8_allgather_params (FP8 delayed
// scaling, TransformerEngine / torchao float8 style): the amax history update, the e4m3
// round trip, and a realistic history input.
#pragma once

#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace pkb_fsdp {

constexpr double kFp8E4m3Max = 448.0;

// roll(history, -1) with the newest amax (fp32, rounded to the history's dtype) last,
// written into `into` (history's shape and dtype).
inline at::Tensor& update_amax_history(at::Tensor& into, const at::Tensor& history, const at::Tensor& amax) {
  int64_t n = history.size(0);
  into.narrow(0, 0, n - 1).copy_(history.narrow(0, 1, n - 1));
  into.narrow(0, n - 1, 1).copy_(amax.reshape({1}));
  return into;
}

// The delayed scale: max(history) (at least 1e-12) / 448, in fp32.
inline at::Tensor delayed_scale(const at::Tensor& history) {
  return pkb::divide_exactly(history.max().to(at::kFloat).clamp_min(1e-12), kFp8E4m3Max);
}

// The current amax, max |x|, in fp32: an inf-norm read straight from x (exact: |x| of a dt
// value is one in fp32), one pass with no |x| copy.
inline at::Tensor current_amax(const at::Tensor& x) {
  return at::linalg_vector_norm(x, INFINITY, c10::nullopt, /*keepdim=*/false, at::kFloat);
}

// x -> fp8_e4m3(x_fp32 / scale) -> fp32 * scale -> x's dtype. The quotient widens x as it
// reads it (the scale, a 1-element fp32 tensor, makes fp32 the op's dtype) and is cast to
// fp8 as it is written; the product reads the fp8 codes widened (ATen promotes no fp8) and
// is rounded to x's dtype as it is written: three passes where there were six.
inline at::Tensor fp8_round_trip(const at::Tensor& x, const at::Tensor& scale) {
  at::Tensor s = scale.reshape({1});
  at::Tensor q = at::empty(x.sizes(), x.options().dtype(at::kFloat8_e4m3fn));
  at::div_out(q, x, s);
  at::Tensor y = at::empty_like(x);
  return at::mul_out(y, q.to(at::kFloat), s);
}

// A history of the last 16 amax values as training leaves it: this rank's current amax
// times exp(U(-0.8, 0.1)) each (the newest amax is the largest in ~1/6 of the trials,
// an older one otherwise), in bf16.
inline at::Tensor make_history(pkb::Ctx& ctx, const at::Tensor& x, int64_t len) {
  at::Tensor amax = x.abs().max().to(at::kFloat);
  at::Tensor f = at::rand({len}, ctx.rng(), ctx.options(at::kFloat)).mul_(0.9).sub_(0.8).exp_();
  return (f * amax).to(at::kBFloat16);
}

}  // namespace pkb_fsdp
