// Ring attention inside a 2-stage pipeline (Megatron order, TP = DP = 1): pp = min(2, W)
// stages of cp = W/pp ranks; CP groups are contiguous within a stage (ranks [p*cp,
// (p+1)*cp)), PP groups strided (ranks c, c+cp). Each stage is one attention block with
// its own weights (equal across its CP group): qkv = x w_qkv^T (dt), causal ring attention
// over the CP group (zig-zag shards), out = ctx w_o^T (dt). Stage 0 takes hidden (its CP
// shard) and sends its output to its PP peer, which runs stage 1 on it. Every rank returns
// its stage's output (B, S, Hd).
// Origin: ParallelKernelBench 56_ring_attention_pp.
// Deviations: zig-zag CP sharding; weights std 1/sqrt(Hd) (not 0.02), drawn per stage
// from the shared stream; stage-1 ranks get no hidden input (the original gave them one
// and ignored it).
#include "cp_common.hpp"

namespace {

struct RingAttentionPp : pkb::Reference {
  std::unique_ptr<pkb::Comm> cp, pp;

  void setup(pkb::Ctx& ctx) override {
    int r = ctx.rank(), c = int(ctx.size("cp"));
    cp = ctx.comm().split(r / c, r);  // one stage's ranks
    pp = ctx.comm().split(r % c, r);  // ranks c, c+cp: stage 0 first
  }

  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t hd = ctx.size("Hd");
    int stage = ctx.rank() / int(ctx.size("cp"));
    for (int p = 0; p < int(ctx.size("pp")); ++p) {
      at::Tensor w_qkv = pkb_cp::shared_randn(ctx, {3, hd / ctx.size("D"), ctx.size("D"), hd}, 1.0 / std::sqrt(double(hd)), ctx.dtype());
      at::Tensor w_o = pkb_cp::shared_randn(ctx, {hd, hd}, 1.0 / std::sqrt(double(hd)), ctx.dtype());
      if (p == stage) {
        in["w_qkv"] = w_qkv;
        in["w_o"] = w_o;
      }
    }
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    int64_t b = ctx.size("B"), s = ctx.size("S"), hd = ctx.size("Hd"), d = ctx.size("D"), nh = hd / d;
    bool first = ctx.rank() < ctx.size("cp"), last = ctx.rank() >= ctx.world() - ctx.size("cp");
    at::Tensor x;
    if (first) {
      x = in["hidden_states"];
    } else {
      x = at::empty({b, s, hd}, in["w_o"].options());
      pp->recv(x, pp->rank() - 1);
    }
    at::Tensor qkv = at::matmul(x, in["w_qkv"].reshape({3 * hd, hd}).t()).view({b, s, 3, nh, d});
    double scale = 1.0 / std::sqrt(double(d));
    at::Tensor c = pkb_cp::ring_attention_zigzag(*cp, qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), scale);
    at::Tensor& res = out["out"];
    at::matmul_out(res, c.to(x.scalar_type()).reshape({b, s, hd}), in["w_o"].t());
    if (!last) pp->send(res, pp->rank() + 1);
  }
};

}  // namespace

PKB_REFERENCE("pp_ring_attention_pp", RingAttentionPp);
