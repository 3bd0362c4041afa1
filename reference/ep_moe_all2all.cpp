// VeOmni's MoE all-to-all primitive: rank r sends input_split_sizes[d] rows of its
// local_tensor (in order) to rank d and returns the rows it receives (output_split_sizes[s]
// from rank s), in source order: an uneven all_to_all_single.
// Origin: ParallelKernelBench 27_moe_all2all_primitive.
// Deviation: the splits come from skewed routing, not M / W each.
#include "ep_moe.hpp"

namespace {

struct MoeAllToAll : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    // The split matrix of all ranks, drawn identically on every rank from the shared stream.
    int64_t w = ctx.world(), m = ctx.size("M");
    at::Generator& gen = ctx.shared_rng();
    at::TensorOptions f32 = ctx.options(at::kFloat);
    at::Tensor prefer = at::randn({1, w}, gen, f32).mul_(0.5) + at::randn({w, w}, gen, f32).mul_(0.2);
    at::Tensor dest = at::multinomial(prefer.softmax(-1), m, /*replacement=*/true, gen);  // (W, M)
    at::Tensor counts = at::zeros({w, w}, f32.dtype(at::kLong)).scatter_add_(1, dest, at::ones_like(dest));
    in["input_split_sizes"] = counts[ctx.rank()].cpu();
    in["output_split_sizes"] = counts.select(1, ctx.rank()).cpu();
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    std::vector<int64_t> out_splits = pkb_ep::to_vec(in["output_split_sizes"]);
    int64_t rows = pkb_ep::total(out_splits);
    out.set_size(0, 0, rows);
    at::Tensor y = out["output"].narrow(0, 0, rows);
    pkb_ep::all_to_all_rows_into(ctx.comm(), y, in["local_tensor"], out_splits, pkb_ep::to_vec(in["input_split_sizes"]));
  }
};

}  // namespace

PKB_REFERENCE("ep_moe_all2all", MoeAllToAll);
