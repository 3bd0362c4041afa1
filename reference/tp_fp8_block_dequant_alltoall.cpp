// DeepSeek-V3 style block FP8 dequantization, then an all-to-all. Rank r holds W chunks of
// fp8 codes y (W, M, N) and fp32 scales s (W, M*N/128), one per 128 consecutive elements
// of a chunk; it dequantizes x = float(y) * s and sends chunk d to rank d. Rank r returns
// (W, M, N) fp32, slice j being rank j's dequantized chunk r.
// Origin: ParallelKernelBench 20_blocked_fp8_dequantize (a Triton kernel there; the same
// math in ATen ops here).
// Deviation: y holds real fp8 e4m3 codes and s positive fp32 scales (the original fed
// randn bf16 "codes" and signed bf16 scales).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct Fp8BlockDequantAllToAll : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& y = in["y"];
    const at::Tensor& s = in["s"];
    int64_t w = y.size(0), block = ctx.size("block");
    at::Tensor x = (y.to(at::kFloat).view({w, -1, block}) * s.unsqueeze(-1)).view(y.sizes());
    ctx.comm().all_to_all(out["x"], x);
  }
};

}  // namespace

PKB_REFERENCE("tp_fp8_block_dequant_alltoall", Fp8BlockDequantAllToAll);
