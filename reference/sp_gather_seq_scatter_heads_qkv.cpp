// Ulysses gather_seq_scatter_heads_qkv: rank r's qkv (B, T, 3*H*D), viewed (B, T, 3, H*D),
// sends slice d of the last dim (H*D/W wide, for q, k and v) to rank d; rank r returns its
// slice over the whole sequence, (B, W*T, 3*H*D/W).
// Origin: ParallelKernelBench 38_ulysses_gather_seq_scatter_heads_qkv (VeOmni).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct GatherSeqScatterHeadsQkv : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["qkv"];
    int64_t w = ctx.world(), b = x.size(0), t = x.size(1), f = x.size(2);
    at::Tensor send = x.view({b, t, 3, w, f / 3 / w}).permute({3, 0, 1, 2, 4}).contiguous();  // (W, B, T, 3, f/3W)
    at::Tensor recv = at::empty_like(send);
    ctx.comm().all_to_all(recv, send);
    out["y"].view({b, w, t, 3, f / 3 / w}).copy_(recv.permute({1, 0, 2, 3, 4}));
  }
};

}  // namespace

PKB_REFERENCE("sp_gather_seq_scatter_heads_qkv", GatherSeqScatterHeadsQkv);
