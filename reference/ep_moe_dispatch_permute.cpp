// VeOmni's MoE token_pre_all2all: permute this rank's tokens expert-major (one row per
// (token, chosen expert)), all_to_all them with the preprocess's split lists, and regroup
// the received (source rank, local expert) chunks by local expert. Returns the regrouped
// rows, the routing map (E, M) and the permutation mapping (token of each row sent).
// Origin: ParallelKernelBench 28_moe_pre_all2all.
// Deviations: realistic skewed routing with splits derived from it (the original's splits
// were synthetic, unrelated to the mask); the torch.Size output is dropped.
#include "ep_moe.hpp"

namespace {

struct DispatchPermute : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t w = ctx.world(), e = ctx.size("E");
    at::Tensor selected = pkb_ep::draw_all_routing(ctx, w, ctx.size("M"), e, ctx.size("top_k")).first;
    at::Tensor counts = at::zeros({w, e}, selected.options()).scatter_add_(
        1, selected.view({w, -1}), at::ones_like(selected).view({w, -1}));
    pkb_ep::Splits s = pkb_ep::splits_of(counts, ctx.rank());
    in["expert_mask"] = pkb_ep::expert_mask_of(selected[ctx.rank()], e);
    in["input_splits"] = s.input_splits;
    in["output_splits"] = s.output_splits;
    in["num_global_tokens_per_local_expert"] = s.per_local;
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor& routing_map = at::sum_out(out["routing_map"], in["expert_mask"], 1);  // (E, M) float32
    at::Tensor order = pkb_ep::expert_major_order(routing_map.to(at::kBool), out["permutation_mapping"]);
    at::Tensor received =
        pkb_ep::all_to_all_rows(ctx.comm(), in["hidden_states"].index_select(0, order),
                                pkb_ep::to_vec(in["output_splits"]), pkb_ep::to_vec(in["input_splits"]));
    at::Tensor idx = pkb_ep::regroup_index(in["num_global_tokens_per_local_expert"]);
    out.set_size(0, 0, idx.numel());
    at::Tensor grouped = out["global_permuted_hidden_states"].narrow(0, 0, idx.numel());
    at::index_select_out(grouped, received, 0, idx);
  }
};

}  // namespace

PKB_REFERENCE("ep_moe_dispatch_permute", DispatchPermute);
