// VeOmni's fused expert-parallel MoE forward (problem 31's layer) with one expert per
// rank (E = W) and a nearly balanced router:
// router (fp32 softmax, top-k), all-gathered per-expert counts, expert-major permute,
// all-to-all dispatch with data-dependent splits, each local expert's SiLU-gated MLP (dt),
// all-to-all combine, weighted unpermute (fp32 sum, rounded once).
// Origin: ParallelKernelBench 49_moe_ep_balanced.
// Deviations: a realistically scaled router; fp32 routing with fragile tokens redrawn;
// fp32 combine.
#include "ep_moe.hpp"

namespace {

struct MoeBalanced : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    pkb_ep::redraw_fragile_tokens(ctx, in["hidden_states"], in["gate_weight"], in["gate_bias"], ctx.size("top_k"),
                                  pkb_ep::kRouteMargin);
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    pkb_ep::fused_moe(ctx.comm(), in, ctx.size("top_k"), /*lora=*/false, out["output"]);
  }
};

}  // namespace

PKB_REFERENCE("ep_moe_balanced", MoeBalanced);
