// Gated DeltaNet (fla, naive recurrent form) with Ulysses-style all-to-all context
// parallelism: rank r holds q, k (1, S, Hh, DK), v (1, S, Hh, DV), gate and beta (1, S, Hh)
// for its sequence shard and all Hh heads, and a_log, dt_bias (Hh/W) for head group r.
// All-to-alls give it the whole sequence (T = W*S) for head group r; per head, with q and
// k L2-normalised (q scaled by DK^-1/2) and the scalar decay a_t = exp(-exp(a_log) *
// softplus(gate_t + dt_bias)), the delta rule runs over all T tokens (fp32, chunked WY form,
// the same math as the token loop), rounds to dt, and an all-to-all returns every head of
// the rank's own tokens. Returns (1, S, Hh, DV).
// Origin: ParallelKernelBench 75_fla_gated_deltanet_cp.
// Deviations: random per-trial a_log and dt_bias (they were constant linspaces); the
// recurrence in chunks instead of a token loop.
#include "cp_common.hpp"

namespace {

struct GatedDeltaNetAllToAll : pkb::Reference {
  // a_log, dt_bias: head group r's slice of per-head values drawn from the shared stream;
  // beta = sigmoid(randn) as in the original.
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t hh = ctx.size("Hh"), hl = ctx.size("Hl");
    at::TensorOptions f32 = ctx.options(at::kFloat);
    at::Tensor a_log = at::rand({hh}, ctx.shared_rng(), f32).mul_(0.2);
    at::Tensor dt_bias = at::rand({hh}, ctx.shared_rng(), f32).mul_(0.2).sub_(0.1);
    in["a_log"] = a_log.narrow(0, ctx.rank() * hl, hl).to(ctx.dtype());
    in["dt_bias"] = dt_bias.narrow(0, ctx.rank() * hl, hl).to(ctx.dtype());
    in["beta"] = at::randn(in["beta"].sizes(), ctx.rng(), f32).sigmoid_().to(ctx.dtype());
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    pkb::Comm& comm = ctx.comm();
    at::Tensor q = pkb_cp::seq_to_heads(comm, in["q"]).to(at::kFloat);  // (1, T, Hl, DK)
    at::Tensor k = pkb_cp::seq_to_heads(comm, in["k"]).to(at::kFloat);
    at::Tensor v = pkb_cp::seq_to_heads(comm, in["v"]).to(at::kFloat);
    at::Tensor gate = pkb_cp::seq_to_heads(comm, in["gate"].unsqueeze(-1)).squeeze(-1).to(at::kFloat);  // (1, T, Hl)
    at::Tensor beta = pkb_cp::seq_to_heads(comm, in["beta"].unsqueeze(-1)).squeeze(-1).to(at::kFloat);
    int64_t b = q.size(0), t = q.size(1), hl = q.size(2), dk = q.size(3), dv = v.size(3);
    at::Tensor a = in["a_log"].to(at::kFloat).exp().view({1, 1, hl});
    at::Tensor logdecay = -a * at::softplus(gate + in["dt_bias"].to(at::kFloat).view({1, 1, hl}));
    at::Tensor qn = q / q.norm(2, -1, true).clamp_min(1e-6) / std::sqrt(double(dk));
    at::Tensor kn = k / k.norm(2, -1, true).clamp_min(1e-6);
    auto rows = [&](const at::Tensor& x) { return x.transpose(1, 2).reshape({b * hl, t, x.size(3)}); };
    at::Tensor o = pkb_cp::delta_rule_chunked(rows(qn), rows(kn), rows(v), logdecay.transpose(1, 2).reshape({b * hl, t, 1}),
                                              beta.transpose(1, 2).reshape({b * hl, t}));
    at::Tensor heads = o.view({b, hl, t, dv}).transpose(1, 2).to(in["q"].scalar_type());  // (1, T, Hl, DV)
    pkb_cp::heads_to_seq(comm, heads, out["o"]);
  }
};

}  // namespace

PKB_REFERENCE("cp_gated_deltanet_all2all", GatedDeltaNetAllToAll);
