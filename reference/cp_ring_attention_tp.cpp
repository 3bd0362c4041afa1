// Ring attention inside a Megatron TP x CP grid (order tp-cp): TP groups are contiguous
// blocks of tp = min(2, W) ranks, CP groups strided (ranks t, t+tp, ...). Rank (cp c, tp t)
// holds hidden (B, S, Hd) for CP shard c of the sequence (zig-zag: chunks c and 2cp-1-c),
// equal across its TP group, and the TP shards of the attention weights: w_qkv (3, NHl, D, Hd)
// (q, k, v rows of heads [t*NHl, (t+1)*NHl)) and w_o (Hd, NHl*D), equal across its CP group.
// qkv = hidden w_qkv^T (dt); causal ring attention over the CP group on the local heads;
// out = ctx w_o^T (dt), all-reduced (sum) over the TP group. Returns (B, S, Hd).
// Origin: ParallelKernelBench 55_ring_attention_tp.
// Deviations: zig-zag CP sharding; weights std 1/sqrt(fan-in) (not 0.02); inputs drawn from
// the shared stream and sliced, so replication matches the grid (make_inputs).
#include "cp_common.hpp"

namespace {

struct RingAttentionTp : pkb::Reference {
  std::unique_ptr<pkb::Comm> tp, cp;

  void setup(pkb::Ctx& ctx) override {
    int r = ctx.rank(), t = int(ctx.size("tp"));
    tp = ctx.comm().split(r / t, r);  // ranks [c*tp, (c+1)*tp)
    cp = ctx.comm().split(r % t, r);  // ranks t, t+tp, t+2tp, ...
  }

  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t b = ctx.size("B"), t = ctx.size("T"), nh = ctx.size("NH"), d = ctx.size("D"), hd = nh * d;
    int64_t tpn = ctx.size("tp"), cpn = ctx.size("cp"), nhl = nh / tpn;
    int tr = ctx.rank() % int(tpn), cr = ctx.rank() / int(tpn);
    at::ScalarType dt = ctx.dtype();
    at::Tensor hidden = pkb_cp::shared_randn(ctx, {b, t, hd}, 1.0, dt);
    at::Tensor w_qkv = pkb_cp::shared_randn(ctx, {3, nh, d, hd}, 1.0 / std::sqrt(double(hd)), dt);
    at::Tensor w_o = pkb_cp::shared_randn(ctx, {hd, nh * d}, 1.0 / std::sqrt(double(hd)), dt);
    in["hidden_states"] = pkb_cp::zigzag_slice(hidden, 1, int(cpn), cr).contiguous();
    in["w_qkv"] = w_qkv.narrow(1, tr * nhl, nhl).contiguous();
    in["w_o"] = w_o.narrow(1, tr * nhl * d, nhl * d).contiguous();
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& h = in["hidden_states"];
    int64_t b = h.size(0), s = h.size(1), d = ctx.size("D"), nhl = ctx.size("NH") / ctx.size("tp");
    at::Tensor qkv = at::matmul(h, in["w_qkv"].reshape({3 * nhl * d, -1}).t()).view({b, s, 3, nhl, d});
    double scale = 1.0 / std::sqrt(double(d));
    at::Tensor c = pkb_cp::ring_attention_zigzag(*cp, qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), scale);
    at::matmul_out(out["out"], c.to(h.scalar_type()).reshape({b, s, nhl * d}), in["w_o"].t());
    tp->all_reduce(out["out"]);
  }
};

}  // namespace

PKB_REFERENCE("cp_ring_attention_tp", RingAttentionTp);
