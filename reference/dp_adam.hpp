// Shared by the data-parallel and ZeRO/FSDP optimizer-step problems (dp_ddp_adam_step,
// fsdp_zero1_adam_step, fsdp_zero2_adam_step, fsdp_step_e2e, fsdp_adam_unshard_allgather):
// the two-layer MLP (Linear -> ReLU -> Linear, MSE loss) and its gradients, Adam's update
// (torch's fused Adam kernel: fp32 math, each result rounded once to dt), and inputs that
// look like a real optimizer's state.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "pkb/reference.hpp"

namespace pkb_dp {

struct AdamHyper {
  double lr, beta1, beta2, eps;
};

inline AdamHyper adam_hyper(pkb::Ctx& ctx) {
  return {ctx.arg_float("lr"), ctx.arg_float("beta1"), ctx.arg_float("beta2"), ctx.arg_float("eps")};
}

// The step count an optimizer keeps (a host int64 scalar, the same on every rank):
// log-uniform in [2, 10000], so early steps (large bias corrections) and late ones both
// occur. Not 1: from a zero state the update is lr * sign(g), which the last bit of a tiny
// gradient flips (by 2 lr, far beyond any tolerance).
inline at::Tensor make_step(pkb::Ctx& ctx) {
  double u = at::rand({1}, ctx.shared_rng(), ctx.options(at::kDouble)).item<double>();
  double lo = std::log(2.0), hi = std::log(10000.0);
  return at::full({}, std::min<int64_t>(10000, int64_t(std::floor(std::exp(lo + u * (hi - lo))))),
                  at::TensorOptions().dtype(at::kLong));
}

// Adam state after step - 1 steps of gradients whose typical size is `scale` (a tensor
// broadcastable to `shape`): bias-corrected m_hat = 0.5 scale z1 (a drift) and v_hat =
// m_hat^2 + scale^2 (0.25 + 0.5 z2^2) (so v_hat >= m_hat^2, v_hat >= scale^2 / 4: a
// second moment never far below the gradient noise, and E v_hat = scale^2), times the
// bias corrections 1 - beta^(step-1). Returns (m, v) in dt.
inline std::pair<at::Tensor, at::Tensor> make_adam_state(pkb::Ctx& ctx, const at::Tensor& scale, at::IntArrayRef shape,
                                                         int64_t step) {
  AdamHyper hp = adam_hyper(ctx);
  at::TensorOptions f32 = ctx.options(at::kFloat);
  at::Tensor drift = at::randn(shape, ctx.rng(), f32).mul_(scale).mul_(0.5);
  at::Tensor z = at::randn(shape, ctx.rng(), f32);
  // In place where it can be: a 1-billion-element state has 4 GiB fp32 temporaries.
  at::Tensor noise = z.mul_(z).mul_(0.5).add_(0.25).mul_(scale).mul_(scale);
  double c1 = 1.0 - std::pow(hp.beta1, double(step - 1)), c2 = 1.0 - std::pow(hp.beta2, double(step - 1));
  at::Tensor m = (drift * c1).to(ctx.dtype());
  at::Tensor v = drift.mul_(drift).add_(noise).mul_(c2).to(ctx.dtype());
  return {m, v};
}

// One Adam step on (p, m, v) with gradient g, in place, through torch's fused Adam
// (at::_fused_adam_, or _fused_adamw_ for AdamW's decoupled decay; what torch.optim.Adam(
// fused=True) runs): one kernel reads p, m, v, g and writes p, m, v, computing in fp32
// (m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr (m / bc1) / (sqrt(v) / sqrt(bc2) +
// eps), bias corrections bc = 1 - beta^step; AdamW first p *= 1 - lr wd) and rounding each
// of p, m, v once to its dtype. The originals ran the same formulas as separate dt ops,
// rounding every intermediate; this is closer to the exact update. All four tensors: the
// same dtype and device, contiguous.
inline void adam_step_(at::Tensor& p, at::Tensor& m, at::Tensor& v, const at::Tensor& g, const AdamHyper& hp,
                       int64_t step, double weight_decay = 0.0) {
  at::Tensor steps = at::full({}, double(step), p.options().dtype(at::kFloat));  // the optimizer's step tensor
  if (weight_decay != 0.0)
    at::_fused_adamw_({p}, {g}, {m}, {v}, {}, {steps}, hp.lr, hp.beta1, hp.beta2, weight_decay, hp.eps,
                      /*amsgrad=*/false, /*maximize=*/false);
  else
    at::_fused_adam_({p}, {g}, {m}, {v}, {}, {steps}, hp.lr, hp.beta1, hp.beta2, 0.0, hp.eps, /*amsgrad=*/false,
                     /*maximize=*/false);
}

// adam_step_ on copies: returns the updated (p, m, v), leaving the arguments unchanged.
struct AdamOut {
  at::Tensor p, m, v;
};

inline AdamOut adam_update(const at::Tensor& p, const at::Tensor& m0, const at::Tensor& v0, const at::Tensor& g,
                           const AdamHyper& hp, int64_t step, double weight_decay = 0.0) {
  AdamOut o{p.clone(at::MemoryFormat::Contiguous), m0.clone(at::MemoryFormat::Contiguous),
            v0.clone(at::MemoryFormat::Contiguous)};
  adam_step_(o.p, o.m, o.v, g.contiguous(), hp, step, weight_decay);
  return o;
}

// The MLP's parameters, in the order the originals flatten them.
struct Mlp {
  at::Tensor w1, b1, w2, b2;
  std::vector<at::Tensor> list() const { return {w1, b1, w2, b2}; }
};

// Gradients of mean((relu(x w1^T + b1) w2^T + b2 - y)^2) with respect to w1, b1, w2, b2,
// computed as autograd does (in the inputs' dtype).
inline std::vector<at::Tensor> mlp_grads(const at::Tensor& x, const at::Tensor& y, const Mlp& p) {
  at::Tensor pre = at::linear(x, p.w1, p.b1);
  at::Tensor h = at::relu(pre);
  at::Tensor out = at::linear(h, p.w2, p.b2);
  at::Tensor dout = (out - y).mul_(2.0 / double(out.numel()));
  at::Tensor gw2 = dout.t().matmul(h), gb2 = dout.sum(0);
  at::Tensor dpre = dout.matmul(p.w2).mul_(h > 0);
  at::Tensor gw1 = dpre.t().matmul(x), gb1 = dpre.sum(0);
  return {gw1, gb1, gw2, gb2};
}

inline at::Tensor flatten(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> flat;
  for (auto& t : ts) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

// Views of `flat` with the shapes of `like`.
inline std::vector<at::Tensor> unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& like) {
  std::vector<at::Tensor> out;
  int64_t off = 0;
  for (auto& t : like) {
    out.push_back(flat.narrow(0, off, t.numel()).view(t.sizes()));
    off += t.numel();
  }
  return out;
}

// The typical size of the averaged gradient of each MLP tensor, estimated on this rank
// from its own data: the RMS of the local gradient over sqrt(W).
inline std::vector<double> grad_scales(pkb::Ctx& ctx, const at::Tensor& x, const at::Tensor& y, const Mlp& p) {
  std::vector<at::Tensor> g = mlp_grads(x, y, p);
  std::vector<double> s;
  for (auto& t : g) {
    double rms = at::linalg_vector_norm(t, 2, c10::nullopt, false, at::kFloat).item<double>() / std::sqrt(double(t.numel()));
    s.push_back(rms / std::sqrt(double(ctx.world())) + 1e-30);
  }
  return s;
}

// One value per element [start, start + len) of the flattened MLP: the scale of the tensor
// it belongs to.
inline at::Tensor flat_scales(const std::vector<double>& s, const Mlp& p, at::TensorOptions opt, int64_t start,
                              int64_t len) {
  std::vector<at::Tensor> parts;
  auto l = p.list();
  int64_t off = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    int64_t lo = std::max(start, off), hi = std::min(start + len, off + l[i].numel());
    if (hi > lo) parts.push_back(at::full({hi - lo}, s[i], opt));
    off += l[i].numel();
  }
  return at::cat(parts);
}

}  // namespace pkb_dp

namespace pkb_dp {

// ZeRO stage 1 and 2 (fsdp_zero1_adam_step, fsdp_zero2_adam_step): broadcast the flat
// parameters from rank 0, local gradients, then the gradient of this rank's part by an
// all-reduce (stage 1) or a reduce-scatter (stage 2), Adam on the part, all-gather of the
// updated parts. Returns w1, b1, w2, b2 and the part's exp_avg and exp_avg_sq.
struct ZeroAdamStep : pkb::Reference {
  explicit ZeroAdamStep(bool scatter) : scatter_(scatter) {}

  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    Mlp p{in["w1"], in["b1"], in["w2"], in["b2"]};
    int64_t part = ctx.size("part");
    at::Tensor scale = flat_scales(grad_scales(ctx, in["x"], in["y"], p), p, ctx.options(at::kFloat),
                                   ctx.rank() * part, part);
    at::Tensor step = make_step(ctx);
    in["step"] = step;
    auto [m, v] = make_adam_state(ctx, scale, {part}, step.item<int64_t>());
    in["exp_avg_part"] = m;
    in["exp_avg_sq_part"] = v;
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    int64_t part = ctx.size("part"), start = ctx.rank() * part;
    std::vector<at::Tensor> templ = {in["w1"], in["b1"], in["w2"], in["b2"]};
    at::Tensor flat_p = flatten(templ);
    comm.broadcast(flat_p, 0);
    auto views = unflatten(flat_p, templ);
    at::Tensor flat_g = flatten(mlp_grads(in["x"], in["y"], {views[0], views[1], views[2], views[3]}));
    at::Tensor g_part;
    if (scatter_) {
      g_part = at::empty({part}, flat_g.options());
      comm.reduce_scatter(g_part, flat_g);
    } else {
      comm.all_reduce(flat_g);
      g_part = flat_g.narrow(0, start, part);
    }
    g_part = g_part / double(ctx.world());
    // flat_p is this call's copy: its part is updated in place; the state in its outputs.
    at::Tensor p_part = flat_p.narrow(0, start, part);
    at::Tensor& m = out["exp_avg_part_new"].copy_(in["exp_avg_part"]);
    at::Tensor& v = out["exp_avg_sq_part_new"].copy_(in["exp_avg_sq_part"]);
    adam_step_(p_part, m, v, g_part, adam_hyper(ctx), in["step"].item<int64_t>());
    at::Tensor gathered = at::empty_like(flat_p);
    comm.all_gather(gathered, p_part);
    // One gather of the flat parameters, four outputs: each copied out of it.
    std::vector<at::Tensor> params = unflatten(gathered, templ);
    for (size_t i = 0; i < params.size(); ++i) out.set(i, params[i]);
  }

 private:
  bool scatter_;
};

}  // namespace pkb_dp
