// FP8 delayed-scaling gradient reduce-scatter: the rank's current amax (fp32) enters its
// amax history (roll, newest last, bf16), the scale is max(history) / 448, the gradient
// makes an e4m3 round trip at that scale, and the round-tripped gradients are
// reduce-scattered (SUM, in dt) and divided by W. Returns the shard and the new history.
// Origin: ParallelKernelBench 52_fp8_reduce_scatter_grads.
// Deviation: a realistic amax history per rank and trial (the original's was 1e-8).
#include "fsdp_fp8.hpp"

namespace {

struct Fp8ReduceScatterGrads : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    in["amax_history"] = pkb_fsdp::make_history(ctx, in["flat_grads"], in["amax_history"].size(0));
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& g = in["flat_grads"];
    at::Tensor& hist = pkb_fsdp::update_amax_history(out["amax_history_new"], in["amax_history"], pkb_fsdp::current_amax(g));
    at::Tensor recon = pkb_fsdp::fp8_round_trip(g, pkb_fsdp::delayed_scale(hist));
    at::Tensor& shard = out["shard"];
    ctx.comm().reduce_scatter(shard, recon);
    shard.div_(ctx.world());
  }
};

}  // namespace

PKB_REFERENCE("fsdp_fp8_reducescatter_grads", Fp8ReduceScatterGrads);
