// DeepSpeed/VeOmni Ulysses attention, end to end: rank r holds hidden (B, S, Hd), its
// sequence shard, and the shared weights w_qkv (3, NH, D, Hd), w_o (Hd, Hd). qkv = hidden
// w_qkv^T (dt), viewed (B, S, 3, NH, D); an all-to-all gives each rank the whole sequence
// for NH/W heads (q alone, then k and v stacked), attention runs there (non-causal, fp32,
// rounded to dt), a second all-to-all brings every head of the rank's own tokens back, and
// out = ctx w_o^T (dt), (B, S, Hd).
// Origin: ParallelKernelBench 39_ulysses_attention_e2e.
// Deviations: attention over the sequence (the original's multiplied (B, T, H/W, D)
// tensors directly, so it attended across the heads of each token); shared weights with
// std 1/sqrt(Hd) (the original drew unscaled randn weights per rank); attention in fp32
// (the original ran it in dt).
#include "cp_common.hpp"

namespace {

struct UlyssesAttention : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& h = in["hidden_states"];
    int64_t b = h.size(0), s = h.size(1), hd = h.size(2), nh = ctx.size("NH"), d = hd / nh;
    at::Tensor qkv = at::matmul(h, in["w_qkv"].reshape({3 * hd, hd}).t()).view({b, s, 3, nh, d});
    at::Tensor q = pkb_cp::seq_to_heads(ctx.comm(), qkv.select(2, 0));                        // (B, T, NH/W, D)
    at::Tensor kv = pkb_cp::seq_to_heads(ctx.comm(), at::stack({qkv.select(2, 1), qkv.select(2, 2)}, 3));  // (B, T, NH/W, 2, D)
    pkb_cp::Block a = pkb_cp::attend_fused(q, kv.select(3, 0), kv.select(3, 1), 1.0 / std::sqrt(double(d)));
    at::Tensor c = pkb_cp::heads_to_seq(ctx.comm(), a.out.to(h.scalar_type()));  // (B, S, NH, D)
    at::matmul_out(out["out"], c.reshape({b, s, hd}), in["w_o"].t());
  }
};

}  // namespace

PKB_REFERENCE("cp_ulysses_attention", UlyssesAttention);
