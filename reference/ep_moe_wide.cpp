// VeOmni's fused expert-parallel MoE forward (problem 31's layer) with two experts per
// rank (E = 2W) and a skewed router:
// router (fp32 softmax, top-k), all-gathered per-expert counts, expert-major permute,
// all-to-all dispatch with data-dependent splits, each local expert's SiLU-gated MLP (dt),
// all-to-all combine, weighted unpermute (fp32 sum, rounded once).
// Origin: ParallelKernelBench 50_moe_ep_wide.
// Deviations: per-expert weights (the original shared one MLP across a rank's
// experts); a realistically scaled, skewed router; fp32 routing with fragile tokens
// redrawn; fp32 combine.
#include "ep_moe.hpp"

namespace {

struct MoeWide : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    pkb_ep::redraw_fragile_tokens(ctx, in["hidden_states"], in["gate_weight"], in["gate_bias"], ctx.size("top_k"),
                                  pkb_ep::kRouteMargin);
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    pkb_ep::fused_moe(ctx.comm(), in, ctx.size("top_k"), /*lora=*/false, out["output"]);
  }
};

}  // namespace

PKB_REFERENCE("ep_moe_wide", MoeWide);
