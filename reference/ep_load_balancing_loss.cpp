// Hugging Face's MoE load-balancing loss (Mixtral / Qwen-MoE auxiliary loss), averaged over
// the data-parallel ranks: per rank loss_r = E * sum_{j,e} f[j, e] * P[e], with f the
// fraction of tokens whose j-th top-k choice is e and P the mean router probability; an
// all-reduce gives every rank (sum_r loss_r) / W.
// Origin: ParallelKernelBench 24_load_balancing_loss_fn.
// Deviations: skewed logits (a shared per-expert bias and a per-rank bias, drawn per trial)
// instead of plain randn, under which the loss was ~top_k in every trial; fp32 arithmetic
// throughout (the original's softmax was dt), the loss fp32 as the original's; the token
// fractions summed over the k slots before the product (the same sum, in another order).
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

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    int64_t e = ctx.size("E"), k = ctx.size("top_k");
    const at::Tensor& logits = in["gate_logits"];
    int64_t m = logits.size(0);
    at::Tensor p = at::softmax(logits, -1, at::kFloat);  // (M, E) fp32
    // sum_{j,e} f[j, e] P[e] = sum_e n_e P[e] / M, with n_e the tokens that chose e in any
    // slot: the choices as a mask summed down its columns (counts, exact in fp32), no
    // atomics on E x K counters and no order among the k choices.
    at::Tensor selected = std::get<1>(p.topk(k, -1, /*largest=*/true, /*sorted=*/false));  // (M, K)
    at::Tensor chose = at::zeros({m, e}, p.options().dtype(at::kBool)).scatter_(1, selected, true);
    at::Tensor n = chose.sum(0, false, at::kFloat);  // (E,)
    at::Tensor loss = at::dot(n, p.mean(0)).mul_(double(e) / double(m));
    ctx.comm().all_reduce_into(out["loss"], loss);
    out["loss"].div_(double(ctx.world()));
  }
};

}  // namespace

PKB_REFERENCE("ep_load_balancing_loss", LoadBalancingLoss);
