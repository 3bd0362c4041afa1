// Ring attention backward with DP gradient averaging (Megatron order cp-dp): dp = min(2, W)
// replicas of cp = W/dp ranks; CP groups contiguous (ranks [d*cp, (d+1)*cp)), DP groups
// strided (ranks c, c+cp). Rank (dp d, cp c) holds dout, q, k, v (B, S, H, D), block c of
// replica d's sequence, and out (dt) and softmax_lse (B, H, S) fp32 of the non-causal
// forward of its queries over the replica's whole sequence. K/V blocks and their fp32
// dK/dV accumulators travel around the CP ring (the fused flash-attention backward per
// block, pkb_cp::attend_backward_fused); the gradients are then averaged over the DP group
// (fp32 sum / dp) and rounded to dt.
// Origin: ParallelKernelBench 57_ring_attention_backward_dp.
// Deviation: out and lse are the true forward over the whole sequence (make_inputs); the
// original computed them from the local block only, so its gradients were not those of any
// forward the ring computes. The DP all-reduce runs in fp32 (the original summed in dt).
#include "cp_common.hpp"

namespace {

struct RingAttentionBwdDp : pkb::Reference {
  std::unique_ptr<pkb::Comm> cp, dp;

  void setup(pkb::Ctx& ctx) override {
    int r = ctx.rank(), c = int(ctx.size("cp"));
    cp = ctx.comm().split(r / c, r);  // one replica's CP shards
    dp = ctx.comm().split(r % c, r);  // the same shard of every replica
  }

  // Every rank draws every rank's dout, q, k, v blocks in the same order from the shared
  // stream and keeps its own, plus its replica's whole K and V for the forward.
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t b = ctx.size("B"), s = ctx.size("S"), h = ctx.size("H"), d = ctx.size("D");
    int cpn = int(ctx.size("cp")), me = ctx.rank(), replica = me / cpn;
    std::vector<at::Tensor> ks, vs;
    for (int r = 0; r < ctx.world(); ++r) {
      at::Tensor dout = pkb_cp::shared_randn(ctx, {b, s, h, d}, 1.0, ctx.dtype());
      at::Tensor q = pkb_cp::shared_randn(ctx, {b, s, h, d}, 1.0, ctx.dtype());
      at::Tensor k = pkb_cp::shared_randn(ctx, {b, s, h, d}, 1.0, ctx.dtype());
      at::Tensor v = pkb_cp::shared_randn(ctx, {b, s, h, d}, 1.0, ctx.dtype());
      if (r == me) {
        in["dout"] = dout;
        in["q"] = q;
        in["k"] = k;
        in["v"] = v;
      }
      if (r / cpn == replica) {
        ks.push_back(k);
        vs.push_back(v);
      }
    }
    pkb_cp::Block fwd = pkb_cp::attend(in["q"], at::cat(ks, 1), at::cat(vs, 1), 1.0 / std::sqrt(double(d)));
    in["out"] = fwd.out.to(ctx.dtype()).contiguous();
    in["softmax_lse"] = fwd.lse.transpose(1, 2).contiguous();  // (B, H, S)
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& q = in["q"];
    double scale = 1.0 / std::sqrt(double(q.size(3)));
    pkb_cp::Grads g =
        pkb_cp::ring_attention_backward(*cp, in["dout"], q, in["k"], in["v"], in["out"], in["softmax_lse"], scale);
    at::Tensor* grads[] = {&g.dq, &g.dk, &g.dv};
    for (size_t i = 0; i < 3; ++i) {
      at::Tensor x = grads[i]->contiguous();
      dp->all_reduce(x);
      out.at(i).copy_(x.div_(double(dp->size())));  // rounded to dt as copied
    }
  }
};

}  // namespace

PKB_REFERENCE("cp_ring_attention_bwd_dp", RingAttentionBwdDp);
