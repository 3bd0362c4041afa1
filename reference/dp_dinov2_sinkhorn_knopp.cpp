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

  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    auto& comm = ctx.comm();
    at::Tensor q = (in["teacher_output"].to(at::kFloat) / ctx.arg_float("teacher_temp")).exp().t();  // (K, Bl)
    at::Tensor total_batch = in["n_masked"].to(at::kFloat);
    comm.all_reduce(total_batch);
    at::Tensor total_mass = q.sum();
    comm.all_reduce(total_mass);
    q = q / total_mass;
    double k = double(q.size(0));
    for (int64_t it = 0; it < ctx.size("n_iterations"); ++it) {
      at::Tensor row_sum = q.sum(1, true);
      comm.all_reduce(row_sum);
      q = q / row_sum / k;
      q = q / q.sum(0, true) / total_batch;
    }
    return {(q * total_batch).t().contiguous()};
  }
};

}  // namespace

PKB_REFERENCE("dp_dinov2_sinkhorn_knopp", SinkhornKnopp);
