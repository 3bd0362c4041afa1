// Backward of the chunked NeMo-RL distributed log-probs with top-k/top-p: the gradient of
// sum_t g_t * logprob_t with respect to the vocab-parallel logits. Per chunk of B*chunk
// tokens: all-to-all to sequence-parallel rows, filter (top-k, top-p), then for each own
// token (onehot(target) - softmax(filtered)) * g_t * keep in fp32, and an all-to-all back
// to vocab-parallel. Rank r returns (B, S, Vl) fp32 for its vocab slice.
// Origin: ParallelKernelBench 84_vocab_parallel_log_prob_topk_chunked_backward (NeMo-RL).
// Deviations: as problem 82 (sampled targets, fp32 filter); grad_output is random per
// trial (shared, as TP ranks hold the same) instead of a constant linspace.
#include "tp_vocab_logprob.hpp"

namespace {

struct VocabParallelLogprobTopkChunkedBwd : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override { pkb_tp::make_logprob_inputs(ctx, in, 2.0); }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& logits3 = in["logits"];
    at::Tensor logits = logits3.reshape({-1, logits3.size(-1)});
    at::Tensor target = in["target"].reshape({-1});
    at::Tensor grad = in["grad_output"].reshape({-1}).to(at::kFloat);
    int64_t n = target.numel(), step = ctx.size("B") * ctx.size("chunk"), w = ctx.world(), vl = logits.size(1);
    at::Tensor res = out["grad_logits"].view({n, vl});  // each chunk's exchange lands in place
    for (int64_t start = 0; start < n; start += step) {
      int64_t cnt = std::min(step, n - start), nl = cnt / w;
      at::Tensor seq = pkb_tp::vocab_to_seq(ctx.comm(), logits.narrow(0, start, cnt));  // in dt, as the forward
      at::Tensor own = target.narrow(0, start + ctx.rank() * nl, nl).unsqueeze(-1);
      at::Tensor gt = grad.narrow(0, start + ctx.rank() * nl, nl).unsqueeze(-1);
      at::Tensor into = res.narrow(0, start, cnt);
      if (auto f = pkb_tp::top_k_top_p_kept(seq, ctx.size("top_k"), ctx.arg_float("top_p"))) {
        // Nonzero only at the kept tokens: (onehot(target) - softmax(filtered)) * g_t there,
        // scattered straight into the return exchange's row order (W, nl, Vl): vocab index
        // v of row i goes to block v / Vl, row i, column v % Vl.
        at::Tensor gk = f->idx.eq(own).to(at::kFloat).sub_(pkb_tp::kept_logits(*f).softmax(-1));
        gk.mul_(gt).mul_(f->keep);
        at::Tensor rows = at::arange(nl, f->idx.options()).unsqueeze(-1);
        at::Tensor slot = f->idx.div(vl, "floor").mul_(nl * vl).add_(rows * vl).add_(f->idx.remainder(vl));
        at::Tensor send = at::zeros({w * nl * vl}, gk.options()).scatter_(0, slot.reshape({-1}), gk.reshape({-1}));
        pkb_tp::send_to_vocab(ctx.comm(), send.view({w * nl, vl}), into);
      } else {
        auto [filtered, keep] = pkb_tp::top_k_top_p(seq.to(at::kFloat), ctx.size("top_k"), ctx.arg_float("top_p"));
        at::Tensor g = filtered.softmax(-1).neg_();
        g.scatter_add_(-1, own, at::ones_like(own, g.options()));
        g.mul_(gt).mul_(keep);
        pkb_tp::seq_to_vocab(ctx.comm(), g, into);
      }
    }
  }
};

}  // namespace

PKB_REFERENCE("tp_vocab_parallel_logprob_topk_chunked_bwd", VocabParallelLogprobTopkChunkedBwd);
