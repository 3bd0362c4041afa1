// NeMo-RL distributed log-probs with top-k/top-p: rank r holds logits (B, S, Vl) for vocab
// slice r and the (shared) sampled tokens (B, S). An all-to-all turns the vocab-parallel
// logits into sequence-parallel rows (rank r: tokens [r*n/W, (r+1)*n/W) of the flattened
// B*S, all V); each rank filters them (top-k, then top-p), takes the fp32 log-softmax at
// its tokens' targets, and an all-gather gives every rank the (B, S) fp32 log-probs.
// Origin: ParallelKernelBench 82_vocab_parallel_log_prob_topk (NeMo-RL).
// Deviations: inputs from make_logprob_inputs (targets sampled from the filtered
// distribution, not a +8 bump that left only the target and log-prob 0); the filter runs
// in fp32 (the original ran it in dt, deciding the top-p cut on bf16 cumulated sums).
#include "tp_vocab_logprob.hpp"

namespace {

struct VocabParallelLogprobTopk : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override { pkb_tp::make_logprob_inputs(ctx, in, 2.0); }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& logits = in["logits"];
    const at::Tensor& target = in["target"];
    pkb_tp::chunk_logprobs(ctx, logits.reshape({-1, logits.size(-1)}), target.reshape({-1}), out["logprob"].view({-1}));
  }
};

}  // namespace

PKB_REFERENCE("tp_vocab_parallel_logprob_topk", VocabParallelLogprobTopk);
