// Open-Sora VAE tensor-parallel Conv3d, row-parallel over input channels: rank r holds
// input channels slice r, x (1, C/W, T, S, S), and the matching weight slice (C, C/W, k, k, k);
// it convolves (no bias, in dt), the partial outputs are all-reduced (SUM, in dt) and the
// shared bias (C,) is added. Every rank returns the same (1, C, To, So, So).
// Origin: ParallelKernelBench 76_opensora_conv3d_allreduce. Its channel-chunked conv path
// only triggers above 2^31 elements, never at these sizes, so this is one conv3d.
// Deviations: weight std 1/sqrt(C*k^3) (fan-in) so |y| ~ 1 (the original used std 1,
// |y| up to ~650); a random shared bias (the original's was a constant linspace).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct Conv3dRowParallelAllReduce : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto v = [&](const char* name) { return ctx.size(name); };
    at::Tensor y = at::conv3d(in["x"], in["weight"], {}, {v("stride"), v("stride"), v("stride")},
                              {v("pad"), v("pad"), v("pad")}, {v("dil"), v("dil"), v("dil")}, 1);
    ctx.comm().all_reduce(y);
    at::add_out(out["y"], y, in["bias"].view({1, -1, 1, 1, 1}));
  }
};

}  // namespace

PKB_REFERENCE("tp_conv3d_rowparallel_allreduce", Conv3dRowParallelAllReduce);
