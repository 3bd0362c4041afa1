// Ulysses gather_heads_scatter_seq: rank r's x (B, T, H, D) is zero-padded to roundup(T, W)
// tokens; sequence block d goes to rank d, which returns its block with every rank's heads,
// (B, Tp/W, W*H, D).
// Origin: ParallelKernelBench 37_ulysses_gather_heads_scatter_seq (VeOmni).
#include "cp_common.hpp"

namespace {

struct GatherHeadsScatterSeq : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["x"];
    int64_t pad = ctx.size("Tp") - x.size(1);
    at::Tensor padded = pad ? at::constant_pad_nd(x, {0, 0, 0, 0, 0, pad}) : x;
    pkb_cp::heads_to_seq(ctx.comm(), padded, out["y"]);
  }
};

}  // namespace

PKB_REFERENCE("sp_gather_heads_scatter_seq", GatherHeadsScatterSeq);
