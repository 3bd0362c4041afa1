// Hugging Face's MoE load-balancing loss (Mixtral / Qwen-MoE auxiliary loss), averaged over
// the data-parallel ranks: per rank loss_r = E * sum_{j,e} f[j, e] * P[e], with f the
// fraction of tokens whose j-th top-k choice is e and P the mean router probability; an
// all-reduce gives every rank (sum_r loss_r) / W.
// Origin: ParallelKernelBench 24_load_balancing_loss_fn.
// Deviations: skewed logits (a shared per-expert bias and a per-rank bias, drawn per trial)
// instead of plain randn, under which the loss was ~top_k in every trial; fp32 arithmetic
// throughout (the original's softmax was dt), the loss fp32 as the original's.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct LoadBalancingLoss : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t m = ctx.size("M"), e = ctx.size("E");
    at::TensorOptions f32 = ctx.options(at::kFloat);
    at::Tensor hot = at::randn({e}, ctx.shared_rng(), f32);
    at::Tensor mine = at::randn({e}, ctx.rng(), f32).mul_(0.5);
    at::Tensor z = at::randn({m, e}, ctx.rng(), f32);
    in["gate_logits"] = (z + hot + mine).to(ctx.dtype());
  }

  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    int64_t e = ctx.size("E"), k = ctx.size("top_k");
    at::Tensor p = in["gate_logits"].to(at::kFloat).softmax(-1);  // (M, E)
    at::Tensor selected = std::get<1>(p.topk(k, -1));             // (M, K)
    at::Tensor sel_t = selected.t().contiguous();                 // (K, M)
    at::Tensor f = at::zeros({k, e}, p.options()).scatter_add_(1, sel_t, at::ones(sel_t.sizes(), p.options()));
    f.div_(double(p.size(0)));                                     // (K, E): fraction of tokens
    at::Tensor loss = (f * p.mean(0).unsqueeze(0)).sum() * double(e);
    ctx.comm().all_reduce(loss);
    return {loss / double(ctx.world())};
  }
};

}  // namespace

PKB_REFERENCE("ep_load_balancing_loss", LoadBalancingLoss);
