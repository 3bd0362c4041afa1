// Tensor-parallel MLP between an all-gather and a reduce-scatter: rank r holds a hidden
// slice x_r (Mr, Hl) of the activations and its shard of the MLP weights, W1_r (H, F) and
// W2_r (F, H). Every rank gathers x (Mr, H) along dim 1, computes its partial
// silu(x @ W1_r) @ W2_r (Mr, H), and the reduce-scatter sums the partials of all ranks
// and hands rank r rows [r*Mr/W, (r+1)*Mr/W).
// Origin: ParallelKernelBench 15_combined_sharded_gemms.
// Deviation: the original's partials covered only the rank's own rows (zeros elsewhere),
// so its reduce-scatter added zeros; here every partial covers all rows and the
// reduce-scatter sums W real contributions (the MLP has intermediate size F*W).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct AllGatherMlpReduceScatter : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["x"];
    int64_t mr = x.size(0), hl = x.size(1), w = ctx.world();
    at::Tensor parts = ctx.comm().all_gather(x);  // (W*Mr, Hl)
    at::Tensor x_full = parts.view({w, mr, hl}).permute({1, 0, 2}).reshape({mr, w * hl});
    at::Tensor partial = at::matmul(at::silu(at::matmul(x_full, in["w1"])), in["w2"]);  // (Mr, H)
    ctx.comm().reduce_scatter(out["y"], partial);
  }
};

}  // namespace

PKB_REFERENCE("tp_allgather_mlp_reducescatter", AllGatherMlpReduceScatter);
