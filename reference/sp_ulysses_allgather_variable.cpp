// Ulysses variable-size all-gather along dim 0: rank r holds x_r (M - 37 r, N); every rank
// returns [x_0; ...; x_{W-1}]. The shards are padded to M rows for one all_gather and cut
// back to their row counts, which the spec fixes (M - 37 r), so no shape exchange is needed.
// Origin: ParallelKernelBench 35_ulysses_all_gather_variable_primitive (VeOmni).
// Deviation: the shards really differ by rank (the original's were all equal).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct UlyssesAllGatherVariable : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["x"];
    int64_t w = ctx.world(), m = ctx.size("M");
    at::Tensor padded = at::zeros({m, x.size(1)}, x.options());
    padded.narrow(0, 0, x.size(0)).copy_(x);
    at::Tensor all = ctx.comm().all_gather(padded);  // (W*M, N)
    std::vector<at::Tensor> parts;
    for (int64_t r = 0; r < w; ++r) parts.push_back(all.narrow(0, r * m, m - 37 * r));
    at::cat_out(out["y"], parts);
  }
};

}  // namespace

PKB_REFERENCE("sp_ulysses_allgather_variable", UlyssesAllGatherVariable);
