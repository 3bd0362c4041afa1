// Token-weighted loss reduction for gradient accumulation: loss_sum = sum over ranks of
// loss * local_valid_tokens (all-reduce of a dt scalar), normalized_loss = loss_sum /
// global_valid_tokens, and the backward grad_loss = grad_normalized_loss * local / global
// + grad_loss_sum * local, all 0-dim dt as in the original.
// Origin: ParallelKernelBench 23_grad_acc_loss.
// Deviations: every input random per trial (counts, loss, upstream gradients); the
// counts are drawn for all ranks from the shared stream so that global = sum of locals.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct GradAccLoss : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t tokens = ctx.size("M") * ctx.size("N");
    at::Tensor counts = at::randint(tokens / 2, tokens + 1, {ctx.world()}, ctx.shared_rng(), ctx.options(at::kLong));
    in["local_valid_tokens"] = counts[ctx.rank()].clone();
    in["global_valid_tokens"] = counts.sum();
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& local = in["local_valid_tokens"];
    const at::Tensor& global = in["global_valid_tokens"];
    // The original replaced a NaN loss by 0 when the rank had no valid token.
    at::Tensor loss = at::where(local == 0, at::nan_to_num(in["loss"]), in["loss"]);
    at::Tensor& loss_sum = at::mul_out(out["loss_sum"], loss, local);
    ctx.comm().all_reduce(loss_sum);
    at::div_out(out["normalized_loss"], loss_sum, global);
    at::add_out(out["grad_loss"], in["grad_normalized_loss"] * local / global, in["grad_loss_sum"] * local);
  }
};

}  // namespace

PKB_REFERENCE("dp_grad_acc_loss_allreduce", GradAccLoss);
