// DeePMD-kit's layer-wise Kalman filter step: a = 1 / all-reduce(sum_i lambda + H_i^T P_i H_i);
// K_i = P_i H_i; w_i += a * err * K_i; P_i = (P_i - a K_i K_i^T) / lambda; the updated
// weights of every rank are all-gathered; lambda_next = nue * lambda + 1 - nue.
// Origin: ParallelKernelBench 63_deepmd_kalman_filter_optimizer.
// Deviations: random SPD P and a random lambda per trial; outputs as three tensors.
#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>

#include "pkb/reference.hpp"

namespace {

struct KalmanFilterStep : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t nb = ctx.size("NB"), bs = ctx.size("BS"), m = 64;
    at::Tensor g = at::randn({nb, bs, m}, ctx.rng(), ctx.options(at::kDouble));
    at::Tensor p = at::baddbmm(at::eye(bs, ctx.options(at::kDouble)).mul(0.5).expand({nb, bs, bs}), g, g.transpose(1, 2),
                               1.0, 1.0 / double(m));
    in["P"] = p.contiguous();
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    const at::Tensor &h = in["H"], &p = in["P"], &w = in["weights"];
    const at::Tensor& lam = in["kalman_lambda"];
    int64_t nb = h.size(0);
    at::Tensor k = at::bmm(p, h);                                            // (NB, BS, 1)
    at::Tensor tmp = (lam * double(nb) + (h * k).sum()).reshape({1}).contiguous();
    comm.all_reduce(tmp);
    at::Tensor a = tmp.reciprocal().reshape({});
    at::Tensor w_new = w + a * in["error"] * k;
    at::div_out(out["P_new"], p - a * at::bmm(k, k.transpose(1, 2)), lam);
    // The original all-gathers the block shapes (all_gather_object); here every rank's
    // shapes are the spec's, so the weights go straight into one tensor.
    comm.all_gather(out["weights_all"], w_new.contiguous());
    double nue = ctx.arg_float("kalman_nue");
    // lam * nue + (1 - nue), the scalar wrapped as `*` wraps it.
    at::mul_out(out["lambda_next"], lam, at::native::wrapped_scalar_tensor(at::Scalar(nue))).add_(1.0 - nue);
  }
};

}  // namespace

PKB_REFERENCE("sci_kalman_filter_optimizer", KalmanFilterStep);
