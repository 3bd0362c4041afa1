// Ulysses all_to_all_tensor (scatter dim 0, gather dim 1): rank r sends row block d of its
// x (M, N) to rank d and returns the W blocks it receives side by side, (M/W, W*N).
// Origin: ParallelKernelBench 33_ulysses_all_to_all_tensor_primitive (VeOmni).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct UlyssesAllToAll : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["x"];
    int64_t w = ctx.world(), ml = x.size(0) / w, n = x.size(1);
    at::Tensor recv = at::empty_like(x);  // (W blocks of (M/W, N)), block s from rank s
    ctx.comm().all_to_all(recv, x.contiguous());
    out["y"].view({ml, w, n}).copy_(recv.view({w, ml, n}).permute({1, 0, 2}));
  }
};

}  // namespace

PKB_REFERENCE("sp_ulysses_all2all", UlyssesAllToAll);
