// DINOv2's distributed Sinkhorn-Knopp teacher centering (fp32): Q = exp(t / temp)^T,
// normalized by the global total mass, then n_iterations of: divide by the global row
// sums (all-reduce of K values) and by K, divide by the local column sums and by the
// global sample count B; finally times B. Returns Q^T (Bl, K).
// Origin: ParallelKernelBench 80_dinov2_distributed_sinkhorn_knopp.
// Deviation: teacher logits with per-prototype and per-rank structure.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct SinkhornKnopp : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t b = ctx.size("Bl"), k = ctx.size("K");
    at::TensorOptions f32 = ctx.options(at::kFloat);
    at::Tensor popular = at::randn({1, k}, ctx.shared_rng(), f32).mul_(0.05);
    at::Tensor own = at::randn({1, k}, ctx.rng(), f32).mul_(0.05);
    in["teacher_output"] = at::randn({b, k}, ctx.rng(), f32).mul_(0.03).add_(popular).add_(own);
  }

  // Q is kept as diag(a) E diag(b) over E = exp(t / temp)^T, written once: each iteration's
  // row and column sums are two matrix-vector products that read E (the original rewrote
  // the whole matrix four times an iteration), and Q is formed once at the end. The same
  // divisions, on the scale vectors: fp32 rounding moves by ~1e-7 relative.
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    at::Tensor e = (in["teacher_output"].to(at::kFloat) / ctx.arg_float("teacher_temp")).exp();  // (Bl, K) = E^T
    at::Tensor total_batch = in["n_masked"].to(at::kFloat);
    comm.all_reduce(total_batch);
    at::Tensor total_mass = e.sum();
    comm.all_reduce(total_mass);
    double k = double(e.size(1));
    at::Tensor a = at::ones({e.size(1)}, e.options()).div_(total_mass);  // Q's row scales (K)
    at::Tensor b = at::ones({e.size(0)}, e.options());                   // Q's column scales (Bl)
    for (int64_t it = 0; it < ctx.size("n_iterations"); ++it) {
      at::Tensor row_sum = a * at::mv(e.t(), b);
      comm.all_reduce(row_sum);
      a = a / row_sum / k;
      at::Tensor col_sum = b * at::mv(e, a);
      b = b / col_sum / total_batch;
    }
    at::mul_out(out["q"], e, a.unsqueeze(0)).mul_((b * total_batch).unsqueeze(1));
  }
};

}  // namespace

PKB_REFERENCE("dp_dinov2_sinkhorn_knopp", SinkhornKnopp);
