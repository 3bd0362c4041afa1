// FP8 delayed-scaling parameter all-gather: the rank's current amax (fp32) enters its
// amax history (roll, newest last, bf16), the scale is max(history) / 448, the parameter
// shard makes an e4m3 round trip at that scale and the round-tripped shards are
// all-gathered. Returns the full parameters and the new history.
// Origin: ParallelKernelBench 53_fp8_allgather_params.
// Deviation: a realistic amax history per rank and trial (the original's was 1e-8).
#include "fsdp_fp8.hpp"

namespace {

struct Fp8AllGatherParams : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    in["amax_history"] = pkb_fsdp::make_history(ctx, in["flat_param_shard"], in["amax_history"].size(0));
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["flat_param_shard"];
    at::Tensor& hist = pkb_fsdp::update_amax_history(out["amax_history_new"], in["amax_history"], pkb_fsdp::current_amax(x));
    at::Tensor recon = pkb_fsdp::fp8_round_trip(x, pkb_fsdp::delayed_scale(hist));
    ctx.comm().all_gather(out["full"], recon);
  }
};

}  // namespace

PKB_REFERENCE("fsdp_fp8_allgather_params", Fp8AllGatherParams);
