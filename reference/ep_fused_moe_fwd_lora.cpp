// VeOmni's fused expert-parallel MoE forward with LoRA adapters on the experts' projections:
// router (fp32 softmax, top-k), all-gathered per-expert counts, expert-major permute,
// all-to-all dispatch with data-dependent splits, each local expert's SiLU-gated MLP with
// its LoRA terms (dt), all-to-all combine, weighted unpermute (fp32 sum, rounded once).
// Origin: ParallelKernelBench 32_fused_moe_fwd_lora.
// Deviations: per-expert weights and LoRA factors (the original shared one MLP and one set
// of factors across a rank's experts), factors scaled like trained adapters; a
// realistically scaled, skewed router; fp32 routing with fragile tokens redrawn; fp32
// combine.
#include "ep_moe.hpp"

namespace {

struct FusedMoeFwdLora : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    pkb_ep::redraw_fragile_tokens(ctx, in["hidden_states"], in["gate_weight"], in["gate_bias"], ctx.size("top_k"),
                                  pkb_ep::kRouteMargin);
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    pkb_ep::fused_moe(ctx.comm(), in, ctx.size("top_k"), /*lora=*/true, out["output"]);
  }
};

}  // namespace

PKB_REFERENCE("ep_fused_moe_fwd_lora", FusedMoeFwdLora);
