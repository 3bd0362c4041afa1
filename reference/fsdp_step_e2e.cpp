// FSDP training step with AdamW: the parameter shards are all-gathered, each rank
// computes the MLP's gradients on its batch slice, the flat gradient is reduce-scattered
// and divided by W, and AdamW (decoupled weight decay; torch's fused kernel) updates the
// rank's shard.
// Returns the updated (theta, exp_avg, exp_avg_sq) shards.
// Origin: ParallelKernelBench 47_fsdp_step_e2e.
// Deviations: every shard is a slice of nn.Linear-initialized parameters (drawn from the
// shared stream); Adam state and step count random per trial; the step count a host scalar.
#include "dp_adam.hpp"

namespace {

struct FsdpStepE2E : pkb::Reference {
  // Empty tensors with the parameters' shapes (for flatten/unflatten).
  static std::vector<at::Tensor> templates(pkb::Ctx& ctx, at::TensorOptions opt) {
    int64_t din = ctx.size("din"), hid = ctx.size("hid"), dout = ctx.size("dout");
    return {at::empty({hid, din}, opt), at::empty({hid}, opt), at::empty({dout, hid}, opt), at::empty({dout}, opt)};
  }

  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    at::TensorOptions f32 = ctx.options(at::kFloat);
    std::vector<at::Tensor> full = templates(ctx, f32);
    double fan_in[] = {double(ctx.size("din")), double(ctx.size("din")), double(ctx.size("hid")),
                       double(ctx.size("hid"))};
    for (size_t i = 0; i < full.size(); ++i)  // nn.Linear's init, the same on every rank
      full[i] = at::rand(full[i].sizes(), ctx.shared_rng(), f32).mul_(2).sub_(1).mul_(std::pow(fan_in[i], -0.5));
    pkb_dp::Mlp p{full[0].to(ctx.dtype()), full[1].to(ctx.dtype()), full[2].to(ctx.dtype()), full[3].to(ctx.dtype())};
    int64_t part = ctx.size("part"), start = ctx.rank() * part;
    in["flat_param_shard"] = pkb_dp::flatten(p.list()).narrow(0, start, part).clone();
    at::Tensor scale = pkb_dp::flat_scales(pkb_dp::grad_scales(ctx, in["x"], in["y"], p), p, f32, start, part);
    at::Tensor step = pkb_dp::make_step(ctx);
    in["step"] = step;
    auto [m, v] = pkb_dp::make_adam_state(ctx, scale, {part}, step.item<int64_t>());
    in["exp_avg_shard"] = m;
    in["exp_avg_sq_shard"] = v;
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    const at::Tensor& shard = in["flat_param_shard"];
    std::vector<at::Tensor> templ = templates(ctx, shard.options());
    at::Tensor full = at::empty({ctx.size("P")}, shard.options());
    comm.all_gather(full, shard);
    auto views = pkb_dp::unflatten(full, templ);
    at::Tensor flat_g = pkb_dp::flatten(pkb_dp::mlp_grads(in["x"], in["y"], {views[0], views[1], views[2], views[3]}));
    at::Tensor g = at::empty_like(shard);
    comm.reduce_scatter(g, flat_g);
    g.div_(ctx.world());
    // Adam on copies of the shard and its state, made in the outputs.
    at::Tensor& p = out["theta"].copy_(shard);
    at::Tensor& m = out["exp_avg"].copy_(in["exp_avg_shard"]);
    at::Tensor& v = out["exp_avg_sq"].copy_(in["exp_avg_sq_shard"]);
    pkb_dp::adam_step_(p, m, v, g, pkb_dp::adam_hyper(ctx), in["step"].item<int64_t>(), ctx.arg_float("weight_decay"));
  }
};

}  // namespace

PKB_REFERENCE("fsdp_step_e2e", FsdpStepE2E);
