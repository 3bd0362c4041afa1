// VeOmni's fused expert-parallel MoE forward (problem 31's layer) on EP groups smaller
// than the world: E = the largest divisor of W that is <= W / 2 experts, one per rank, in
// each block of E consecutive ranks (data-parallel replicas of the layer); top_k =
// min(2, E). Router (fp32 softmax, top-k), counts all-gathered over the group, permute,
// all-to-all dispatch and combine within the group, weighted unpermute (fp32 sum).
// Origin: ParallelKernelBench 51_moe_ep_narrow.
// Deviations: W = 2 and odd primes (single-rank groups, no communication) excluded; an
// expert's replicas share its weights; a realistically scaled, skewed router; fp32 routing
// with fragile tokens redrawn; fp32 combine.
#include "ep_moe.hpp"

namespace {

struct MoeNarrow : pkb::Reference {
  std::unique_ptr<pkb::Comm> ep;

  void setup(pkb::Ctx& ctx) override {
    int e = static_cast<int>(ctx.size("E"));
    ep = ctx.comm().split(ctx.rank() / e, ctx.rank());  // ranks {g E, ..., g E + E - 1}
  }

  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    pkb_ep::redraw_fragile_tokens(ctx, in["hidden_states"], in["gate_weight"], in["gate_bias"], ctx.size("top_k"),
                                  pkb_ep::kRouteMargin);
    // Every expert's weights from the shared stream; the rank keeps its group index's.
    int64_t e = ctx.size("E"), n = ctx.size("N"), i = ctx.size("I"), q = ctx.rank() % e;
    at::TensorOptions f32 = ctx.options(at::kFloat);
    auto uniform = [&](const char* name, std::vector<int64_t> shape, int64_t fan_in) {
      double bound = 1.0 / std::sqrt(double(fan_in));
      shape.insert(shape.begin(), e);
      at::Tensor all = at::rand(shape, ctx.shared_rng(), f32).mul_(2 * bound).sub_(bound);
      in[name] = all.narrow(0, q, 1).to(ctx.dtype());
    };
    uniform("gate_proj_weight", {i, n}, n);
    uniform("gate_proj_bias", {i}, n);
    uniform("up_proj_weight", {i, n}, n);
    uniform("up_proj_bias", {i}, n);
    uniform("down_proj_weight", {n, i}, i);
    uniform("down_proj_bias", {n}, i);
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    pkb_ep::fused_moe(*ep, in, ctx.size("top_k"), /*lora=*/false, out["output"]);
  }
};

}  // namespace

PKB_REFERENCE("ep_moe_narrow", MoeNarrow);
