// DeepSeek-V3 style 1x128 block FP8 quantization of activations, then an all-gather.
// Every 128-element block of a row of x (M, N) gets the scale s = amax(|block|) / 448
// (fp32; 1 where the block is all zero) and the codes y = fp8_e4m3(x / s). Every rank
// returns the all-gathered codes (W*M, N) and scales (W*M, N/128), rank r's rows at r*M.
// Origin: ParallelKernelBench 19_blocked_fp8_quantize (a Triton act_quant kernel there;
// the same math in ATen ops here). The fp8 codes travel as bytes, as in the original.
#include <ATen/ATen.h>

#include <cmath>

#include "pkb/reference.hpp"

namespace {

struct Fp8BlockQuantAllGather : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["x"];
    int64_t m = x.size(0), n = x.size(1), block = ctx.size("block");
    // Two passes over x, none over an fp32 copy (the original's ATen form made five): the
    // blocks' amax as an inf-norm read straight from dt (exact: |x| of dt is exact in fp32),
    // and the quotient computed in fp32 and rounded to fp8 in the kernel that divides.
    at::Tensor xb = x.view({m, n / block, block});
    at::Tensor amax = at::linalg_vector_norm(xb, INFINITY, {-1}, /*keepdim=*/false, at::kFloat);
    at::Tensor s = pkb::divide_exactly(amax, 448.0);  // (M, N/block)
    at::Tensor safe = at::where(s == 0, at::ones_like(s), s);
    at::Tensor y = at::empty({m, n / block, block}, x.options().dtype(at::kFloat8_e4m3fn));
    at::div_out(y, xb, safe.unsqueeze(-1));
    y = y.view({m, n});
    at::Tensor y_all = out["y"].view(at::kByte);  // the communicator moves fp8 as bytes
    ctx.comm().all_gather(y_all, y.view(at::kByte));
    ctx.comm().all_gather(out["s"], s);
  }
};

}  // namespace

PKB_REFERENCE("tp_fp8_block_quant_allgather", Fp8BlockQuantAllGather);
