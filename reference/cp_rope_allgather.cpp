// RoPE on a context-parallel shard, then an all-gather along the sequence: rank r holds
// q, k (B, S, H, D) for positions [r*S, (r+1)*S) and their rotary tables cos, sin (B, S, D);
// q_embed = q*cos + rotate_half(q)*sin (fp32, rounded once), the same for k; every rank
// returns both gathered to (B, T, H, D).
// Origin: ParallelKernelBench 17_rope_allgather.
// Deviations: cos/sin are real rotary tables at randomly offset positions (make_inputs),
// not randn; the rotation runs in fp32 and rounds once.
#include "cp_common.hpp"

namespace {

// x * cos + rotate_half(x) * sin in fp32, rounded once: by halves, lo * c - hi * s and
// hi * c + lo * s (the same fp32 products and sums as with rotate_half's copy), each dt half
// widened by its product (dt times fp32 is fp32), no fp32 copy of x or of its rotation. The
// second product, the sum and the rounding into the dt output are one addcmul (its product
// is rounded to fp32 before the sum, as a product of its own is): 2.90 ms a tensor at
// --size large against 4.13 with the product, sum and copy apart, bit for bit the same
// (bench/rope_allgather_probe.py). ATen has no fused rotary.
at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  int64_t half = x.size(-1) / 2;
  at::Tensor c = cos.to(at::kFloat).unsqueeze(2), s = sin.to(at::kFloat).unsqueeze(2);
  at::Tensor lo = x.narrow(-1, 0, half), hi = x.narrow(-1, half, half);
  at::Tensor out = at::empty_like(x), out_lo = out.narrow(-1, 0, half), out_hi = out.narrow(-1, half, half);
  at::addcmul_out(out_lo, lo * c.narrow(-1, 0, half), hi, s.narrow(-1, 0, half), /*value=*/-1);
  at::addcmul_out(out_hi, hi * c.narrow(-1, half, half), lo, s.narrow(-1, half, half));
  return out;
}

// (B, S, H, D) shards of every rank -> `into` (B, W*S, H, D).
void gather_seq_bshd(pkb::Comm& comm, const at::Tensor& x, at::Tensor& into) {
  int64_t w = comm.size(), b = x.size(0), s = x.size(1);
  if (b == 1) {  // (W*S, H, D) is the gathered layout already
    comm.all_gather(into, x.contiguous());
    return;
  }
  at::Tensor all = comm.all_gather(x.contiguous());  // (W*B, S, H, D)
  into.view({b, w, s, x.size(2), x.size(3)}).copy_(all.view({w, b, s, x.size(2), x.size(3)}).transpose(0, 1));
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

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor &cos = in["cos_local"], &sin = in["sin_local"];
    gather_seq_bshd(ctx.comm(), rope(in["q_local"], cos, sin), out["q_embed"]);
    gather_seq_bshd(ctx.comm(), rope(in["k_local"], cos, sin), out["k_embed"]);
  }
};

}  // namespace

PKB_REFERENCE("cp_rope_allgather", RopeAllGather);
