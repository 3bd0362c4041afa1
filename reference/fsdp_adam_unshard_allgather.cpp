// The distributed optimizer's step: Adam on this rank's parameter shard (torch's fused Adam
// kernel: fp32 math, each result rounded once to dt), then an all-gather of the updated
// shards into the full parameters.
// Origin: ParallelKernelBench 43_fused_adam_grad_unshard_allgather.
// Deviations: master parameters ~0.02 randn (trained-weight scale, so a bf16 update
// shows); Adam state and step count random per trial; the step count a host scalar.
#include "dp_adam.hpp"

namespace {

struct AdamUnshardAllGather : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    at::Tensor step = pkb_dp::make_step(ctx);
    in["step"] = step;
    auto [m, v] = pkb_dp::make_adam_state(ctx, at::scalar_tensor(1.0, ctx.options(at::kFloat)), {ctx.size("P")},
                                          step.item<int64_t>());
    in["exp_avg"] = m;
    in["exp_avg_sq"] = v;
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto upd = pkb_dp::adam_update(in["master_shard"], in["exp_avg"], in["exp_avg_sq"], in["grad_shard"],
                                   pkb_dp::adam_hyper(ctx), in["step"].item<int64_t>());
    ctx.comm().all_gather(out["params"], upd.p);
  }
};

}  // namespace

PKB_REFERENCE("fsdp_adam_unshard_allgather", AdamUnshardAllGather);
