// NeMo-RL chunked distributed log-probs with top-k/top-p: the math of
// tp_vocab_parallel_logprob_topk (same outputs), processed in chunks of B*chunk
// consecutive tokens of the flattened B*S order, each chunk with its own all-to-all
// (vocab -> sequence parallel) and all-gather, which bounds the memory of the
// sequence-parallel logits.
// Origin: ParallelKernelBench 83_vocab_parallel_log_prob_topk_chunked (NeMo-RL).
// Deviations: as problem 82 (sampled targets, fp32 filter).
#include "tp_vocab_logprob.hpp"

namespace {

struct VocabParallelLogprobTopkChunked : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override { pkb_tp::make_logprob_inputs(ctx, in, 2.0); }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& target = in["target"];
    at::Tensor logits = in["logits"].reshape({-1, in["logits"].size(-1)});
    at::Tensor flat = target.reshape({-1});
    int64_t n = flat.numel(), step = ctx.size("B") * ctx.size("chunk");
    at::Tensor lp = out["logprob"].view({-1});  // each chunk's all-gather lands in place
    for (int64_t start = 0; start < n; start += step) {
      int64_t cnt = std::min(step, n - start);
      pkb_tp::chunk_logprobs(ctx, logits.narrow(0, start, cnt), flat.narrow(0, start, cnt), lp.narrow(0, start, cnt));
    }
  }
};

}  // namespace

PKB_REFERENCE("tp_vocab_parallel_logprob_topk_chunked", VocabParallelLogprobTopkChunked);
