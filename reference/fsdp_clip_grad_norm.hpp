// Shared by fsdp_clip_grad_norm and fsdp_clip_grad_norm_ep (VeOmni's FSDP2 gradient
// clipping): the inputs (gradients whose global norm is near max_norm, with per-rank
// scales) and the local sum of |g|^p in fp32.
#pragma once

#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

#include "pkb/reference.hpp"

namespace pkb_fsdp {

// Gradients of `count` elements in all, over all ranks: randn times exp(U(-1, 0.4)) /
// sqrt(count) (shared: the global norm lands in ~[0.4, 2] around max_norm = 1, so some
// trials clip and some do not) times exp(U(-1, 1)) per rank and tensor (so one rank's
// norm times sqrt(W) says little about the global norm).
inline void make_clip_inputs(pkb::Ctx& ctx, pkb::Inputs& in, const std::vector<std::string>& names, double count) {
  at::TensorOptions f32 = ctx.options(at::kFloat);
  double shared = std::exp(at::rand({1}, ctx.shared_rng(), f32).item<double>() * 1.4 - 1.0) / std::sqrt(count);
  at::Tensor own = at::rand({int64_t(names.size())}, ctx.rng(), f32).mul_(2).sub_(1).exp_().cpu();
  for (size_t i = 0; i < names.size(); ++i) {
    at::Tensor& g = in[names[i]];
    g = at::randn(g.sizes(), ctx.rng(), f32).mul_(shared * own[i].item<double>()).to(ctx.dtype());
  }
}

// sum over the tensors of ||g||_p^p, in fp32 (a 0-dim tensor on the rank's device).
// Each norm accumulated in fp32 straight from g's dtype: one pass, no fp32 copy of g.
inline at::Tensor local_pth_sum(const std::vector<at::Tensor>& grads, double p) {
  at::Tensor acc = at::zeros({}, grads.at(0).options().dtype(at::kFloat));
  for (auto& g : grads) acc = acc + at::linalg_vector_norm(g, p, {}, /*keepdim=*/false, at::kFloat).pow(p);
  return acc;
}

// g * coef in fp32, rounded to g's dtype once, in one pass, into `out`. coef goes in as a
// 1-element tensor: a 0-dim fp32 tensor would not lift a bf16 g's product to fp32 (it
// would round the coefficient to bf16 first: up to 2^-8 more error).
inline void clip_into(at::Tensor& out, const at::Tensor& g, const at::Tensor& coef) {
  at::mul_out(out, g, coef.reshape({1}));
}

}  // namespace pkb_fsdp
