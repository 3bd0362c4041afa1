// VeOmni's expert-parallel preprocess: from the one-hot top-k choices expert_mask
// (E, top_k, M) of every rank, the all-to-all split sizes (rows to and from each rank), the
// tokens from each rank per local expert and their sums, all on the host.
// Origin: ParallelKernelBench 26_moe_token_preprocess.
// Deviation: the mask comes from realistic routing (top-k of a skewed router's softmax,
// distinct experts per token) instead of uniform randint choices.
#include "ep_moe.hpp"

namespace {

struct TokenPreprocess : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t e = ctx.size("E");
    pkb_ep::Router router = pkb_ep::draw_router(ctx.shared_rng(), 64, e, ctx.options(at::kFloat));
    at::Tensor logits = pkb_ep::draw_logits(ctx.rng(), router, ctx.size("M"));
    at::Tensor selected = pkb_ep::top_k_route(logits, ctx.size("top_k")).first;
    in["expert_mask"] = pkb_ep::expert_mask_of(selected, e);
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    int64_t w = ctx.world(), e = ctx.size("E"), l = e / w;
    at::Tensor counts = in["expert_mask"].sum({1, 2});  // (E,) float32
    at::Tensor all = ctx.comm().all_gather(counts).view({w, e});
    at::Tensor per_local = all.narrow(1, ctx.rank() * l, l).contiguous();
    at::Tensor input_splits = counts.view({w, l}).sum(1).to(at::kLong);
    at::Tensor output_splits = per_local.sum(1).to(at::kLong);
    // The host outputs: each copy_ is the device-to-host copy .cpu() would make.
    out["input_splits"].copy_(input_splits);
    out["output_splits"].copy_(output_splits);
    out["per_local_expert"].copy_(per_local);
    out["sum_per_local_expert"].copy_(per_local.sum(0));
  }
};

}  // namespace

PKB_REFERENCE("ep_moe_token_preprocess", TokenPreprocess);
