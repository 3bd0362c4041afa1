// RMSNorm over a hidden dimension sharded across ranks: rank r holds hidden slice
// x_r (M, N) of a W*N-wide hidden state and its slice of the weight (N,). The per-row sum
// of squares (fp32) is all-reduced; each rank returns
// weight * (x_r * rsqrt(sum_sq / (N*W) + eps)).to(dt).
// Origin: ParallelKernelBench 18_tp_rms_norm (HF LlamaRMSNorm split over TP ranks).
// Deviation: rows of x get a random scale per rank (make_inputs), so one shard's sum of
// squares says little about the row's: with plain randn every shard had rms ~ 1.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct RmsNormAllReduce : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t m = ctx.size("M"), n = ctx.size("N");
    at::TensorOptions f32 = ctx.options(at::kFloat);
    at::Tensor z = at::randn({m, n}, ctx.rng(), f32);
    at::Tensor scale = at::rand({m, 1}, ctx.rng(), f32).mul_(2).sub_(1).exp_();  // e^U(-1, 1)
    in["hidden"] = z.mul_(scale).to(ctx.dtype());
  }

  // Three passes over the rows, none over an fp32 copy of them (the original's unfused
  // fp32 ops made eight): the sum of squares accumulated in fp32 straight from dt (as a
  // 2-norm, squared: within an fp32 ulp of the original's sum), and the product with the
  // fp32 scale rounded to dt in the same kernel, as the original's .to(dt) rounds it.
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& hidden = in["hidden"];
    at::Tensor sum_sq = at::linalg_vector_norm(hidden, 2, {-1}, /*keepdim=*/true, at::kFloat).square_();
    ctx.comm().all_reduce(sum_sq);
    at::Tensor inv_rms = sum_sq.div_(static_cast<double>(hidden.size(-1) * ctx.world())).add_(ctx.arg_float("eps")).rsqrt_();
    at::mul_out(out["y"], hidden, inv_rms).mul_(in["weight"]);
  }
};

}  // namespace

PKB_REFERENCE("tp_rmsnorm_allreduce", RmsNormAllReduce);
