// Shared by fsdp_fp8_reducescatter_grads and fsdp_fp8_allgather_params (FP8 delayed
// scaling, TransformerEngine / torchao float8 style): the amax history update, the e4m3
// round trip, and a realistic history input.
#pragma once

#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace pkb_fsdp {

constexpr double kFp8E4m3Max = 448.0;

// roll(history, -1) with the newest amax (fp32, rounded to the history's dtype) last.
inline at::Tensor update_amax_history(const at::Tensor& history, const at::Tensor& amax) {
  at::Tensor out = at::roll(history, {-1}, {0});
  out.narrow(0, out.size(0) - 1, 1).copy_(amax.reshape({1}));
  return out;
}

// The delayed scale: max(history) (at least 1e-12) / 448, in fp32.
inline at::Tensor delayed_scale(const at::Tensor& history) {
  return pkb::divide_exactly(history.max().to(at::kFloat).clamp_min(1e-12), kFp8E4m3Max);
}

// x -> fp8_e4m3(x_fp32 / scale) -> fp32 * scale -> x's dtype.
inline at::Tensor fp8_round_trip(const at::Tensor& x, const at::Tensor& scale) {
  at::Tensor q = (x.to(at::kFloat) / scale).to(at::kFloat8_e4m3fn);
  return (q.to(at::kFloat) * scale).to(x.scalar_type());
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
