// Hyena (Evo 2) short depthwise causal Conv1d on a zig-zag CP shard: rank r holds x
// (B, C, 2L) = chunks r and 2W-1-r; the K-1 positions before chunk r come from rank r-1's
// first chunk (zeros on rank 0), those before chunk 2W-1-r from rank r+1's second chunk
// (rank W-1: its own first chunk). Halos move by batch_p2p with the neighbours; both chunks
// then go through one grouped conv1d (fp32, rounded once). Returns y (B, C, 2L).
// Origin: ParallelKernelBench 71_hyena_conv1d_boundary_exchange (NeMo / Savanna).
// Deviation: the depthwise weight is shared by all ranks (the original's differed by rank).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct HyenaConv1dHalo : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["x"];
    const at::Tensor& weight = in["weight"];
    int r = ctx.rank(), w = ctx.world();
    int64_t b = x.size(0), c = x.size(1), l = x.size(2) / 2, pad = weight.size(2) - 1;
    at::Tensor chunks = x.view({b, c, 2, l});
    at::Tensor tail_a = chunks.select(2, 0).narrow(-1, l - pad, pad).contiguous();
    at::Tensor tail_b = chunks.select(2, 1).narrow(-1, l - pad, pad).contiguous();
    at::Tensor prev_a = at::zeros_like(tail_a), next_b = tail_a;  // rank 0 / rank W-1 defaults
    std::vector<pkb::P2POp> ops;
    if (r > 0) {
      ops.push_back({pkb::P2POp::Recv, prev_a, r - 1});
      ops.push_back({pkb::P2POp::Send, tail_b, r - 1});
    }
    if (r < w - 1) {
      next_b = at::empty_like(tail_a);
      ops.push_back({pkb::P2POp::Send, tail_a, r + 1});
      ops.push_back({pkb::P2POp::Recv, next_b, r + 1});
    }
    if (!ops.empty()) ctx.comm().batch_p2p(ops);
    // Chunk a's rows, then chunk b's, each behind its halo: written once, widened as copied.
    at::Tensor padded = at::empty({2 * b, c, pad + l}, x.options().dtype(at::kFloat));
    padded.narrow(-1, 0, pad).copy_(at::cat({prev_a, next_b}));
    padded.narrow(-1, pad, l).view({2, b, c, l}).copy_(chunks.permute({2, 0, 1, 3}));
    at::Tensor y = at::conv1d(padded, weight.to(at::kFloat), std::nullopt, at::IntArrayRef{1}, at::IntArrayRef{0}, at::IntArrayRef{1}, c);  // (2B, C, L)
    // Back to (B, C, 2L), rounded to dt as copied.
    out["y"].view({b, c, 2, l}).permute({2, 0, 1, 3}).copy_(y.view({2, b, c, l}));
  }
};

}  // namespace

PKB_REFERENCE("cp_hyena_conv1d_halo", HyenaConv1dHalo);
