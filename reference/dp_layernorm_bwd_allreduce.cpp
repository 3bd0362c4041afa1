// LayerNorm parameter gradients over data-parallel ranks: rank r holds x_hat (M, N) (the
// normalized LayerNorm input) and dy (M, N); every rank returns d_gamma = sum dy * x_hat
// and d_beta = sum dy over all ranks' tokens (N,), partial sums rounded to dt and
// all-reduced in dt as in the original.
// Origin: ParallelKernelBench 9_layernorm_backward.
// Deviation: x_hat rows are standardized (mean 0, variance 1) as LayerNorm's output is;
// the original used unit-L2-norm rows.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct LayerNormBwdAllReduce : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    at::Tensor x = at::randn({ctx.size("M"), ctx.size("N")}, ctx.rng(), ctx.options(at::kFloat));
    x = x - x.mean(-1, true);
    x = x / (x.pow(2).mean(-1, true) + 1e-5).sqrt();
    in["x_hat"] = x.to(ctx.dtype());
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& dy = in["dy"];
    at::Tensor& d_gamma = at::sum_out(out["d_gamma"], dy * in["x_hat"], 0);
    at::Tensor& d_beta = at::sum_out(out["d_beta"], dy, 0);
    ctx.comm().all_reduce(d_beta);
    ctx.comm().all_reduce(d_gamma);
  }
};

}  // namespace

PKB_REFERENCE("dp_layernorm_bwd_allreduce", LayerNormBwdAllReduce);
