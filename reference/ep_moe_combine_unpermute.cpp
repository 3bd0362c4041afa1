// VeOmni's MoE tokens_post_all2all: regroup this rank's expert outputs (local expert, then
// source rank) source-major, all_to_all them back with the dispatch's splits swapped, then
// weight each returned row by its routing probability and sum the rows of each token.
// Origin: ParallelKernelBench 29_moe_post_all2all.
// Deviations: realistic skewed routing with splits derived from it (the original's splits
// were synthetic); expert outputs in a fixed-capacity buffer; weighting and the sum in fp32,
// rounded once (the original's bf16 scatter_add_ depended on the order of the adds).
#include "ep_moe.hpp"

namespace {

struct CombineUnpermute : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t w = ctx.world(), e = ctx.size("E");
    auto [selected, probs] = pkb_ep::draw_all_routing(ctx, w, ctx.size("M"), e, ctx.size("top_k"));
    at::Tensor counts = at::zeros({w, e}, selected.options()).scatter_add_(
        1, selected.view({w, -1}), at::ones_like(selected).view({w, -1}));
    pkb_ep::Splits s = pkb_ep::splits_of(counts, ctx.rank());
    at::Tensor mine = selected[ctx.rank()].contiguous();
    at::Tensor map = pkb_ep::routing_map_of(mine, e);
    in["routing_weights"] = probs[ctx.rank()].to(ctx.dtype());
    in["selected_experts"] = mine;
    in["input_splits"] = s.input_splits;
    in["output_splits"] = s.output_splits;
    in["num_global_tokens_per_local_expert"] = s.per_local;
    in["routing_map"] = map;
    in["permutation_mapping"] = pkb_ep::expert_major_order(map);
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& per_local = in["num_global_tokens_per_local_expert"];
    at::Tensor idx = pkb_ep::regroup_index(per_local);
    at::Tensor grouped = in["expert_outputs"].narrow(0, 0, idx.numel());
    at::Tensor by_source = pkb_ep::ungroup(grouped, idx);
    at::Tensor returned =
        pkb_ep::all_to_all_rows(ctx.comm(), by_source, pkb_ep::to_vec(in["input_splits"]), pkb_ep::to_vec(in["output_splits"]));
    out.set({pkb_ep::unpermute_rows(returned, in["routing_weights"], in["selected_experts"], in["permutation_mapping"])});
  }
};

}  // namespace

PKB_REFERENCE("ep_moe_combine_unpermute", CombineUnpermute);
