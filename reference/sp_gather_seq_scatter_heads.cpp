// Ulysses gather_seq_scatter_heads: rank r's x (B, S, H, D) sends head group d (H/W heads)
// to rank d; rank r returns its head group over the whole sequence, (B, W*S, H/W, D).
// Origin: ParallelKernelBench 36_ulysses_gather_seq_scatter_heads (VeOmni).
#include "cp_common.hpp"

namespace {

struct GatherSeqScatterHeads : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    pkb_cp::seq_to_heads(ctx.comm(), in["x"], out["y"]);
  }
};

}  // namespace

PKB_REFERENCE("sp_gather_seq_scatter_heads", GatherSeqScatterHeads);
