// RoPE on a context-parallel shard, then an all-gather along the sequence: rank r holds
// q, k (B, S, H, D) for positions [r*S, (r+1)*S) and their rotary tables cos, sin (B, S, D);
// q_embed = q*cos + rotate_half(q)*sin (fp32, rounded once), the same for k; every rank
// returns both gathered to (B, T, H, D).
// Origin: ParallelKernelBench 17_rope_allgather.
// Deviations: cos/sin are real rotary tables at randomly offset positions (make_inputs),
// not randn; the rotation runs in fp32 and rounds once.
#include "cp_common.hpp"

namespace {

at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  at::Tensor xf = x.to(at::kFloat);
  int64_t half = xf.size(-1) / 2;
  at::Tensor rot = at::cat({xf.narrow(-1, half, half).neg(), xf.narrow(-1, 0, half)}, -1);
  at::Tensor c = cos.to(at::kFloat).unsqueeze(2), s = sin.to(at::kFloat).unsqueeze(2);
  return (xf * c + rot * s).to(x.scalar_type());
}

// (B, S, H, D) shards of every rank -> (B, W*S, H, D).
at::Tensor gather_seq_bshd(pkb::Comm& comm, const at::Tensor& x) {
  at::Tensor all = comm.all_gather(x.contiguous());  // (W*B, S, H, D)
  int64_t w = comm.size(), b = x.size(0), s = x.size(1);
  return all.view({w, b, s, x.size(2), x.size(3)}).transpose(0, 1).reshape({b, w * s, x.size(2), x.size(3)});
}

struct RopeAllGather : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t b = ctx.size("B"), s = ctx.size("S"), d = ctx.size("D");
    at::TensorOptions f64 = ctx.options(at::kDouble);
    at::Tensor offset = at::randint(0, 4096, {b}, ctx.shared_rng(), f64);
    at::Tensor pos = offset.unsqueeze(1) + at::arange(ctx.rank() * s, (ctx.rank() + 1) * s, f64).unsqueeze(0);
    at::Tensor inv_freq = at::pow(ctx.arg_float("rope_base"), at::arange(0, d, 2, f64).div_(-double(d)));
    at::Tensor freqs = pos.unsqueeze(-1) * inv_freq;  // (B, S, D/2)
    at::Tensor emb = at::cat({freqs, freqs}, -1);
    in["cos_local"] = emb.cos().to(ctx.dtype());
    in["sin_local"] = emb.sin().to(ctx.dtype());
  }

  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    const at::Tensor &cos = in["cos_local"], &sin = in["sin_local"];
    return {gather_seq_bshd(ctx.comm(), rope(in["q_local"], cos, sin)),
            gather_seq_bshd(ctx.comm(), rope(in["k_local"], cos, sin))};
  }
};

}  // namespace

PKB_REFERENCE("cp_rope_allgather", RopeAllGather);
