// Megatron-LM vocab-parallel cross-entropy, forward: rank r holds logits (B, S, Vl) for
// vocab slice [r*Vl, (r+1)*Vl) and the (shared) targets (B, S). Three all-reduces (MAX of
// the row maxima, SUM of the target logit, SUM of exp) give every rank the per-token loss
// log(sum_v exp(z_v - max)) - (z_target - max), returned in dt.
// Origin: ParallelKernelBench 73_vocab_parallel_cross_entropy_loss
// (megatron/core/tensor_parallel/cross_entropy.py, _VocabParallelCrossEntropy).
// Deviations: the logits are not modified in place (the original subtracted the max from
// its input); the math runs in fp32 as Megatron's does (the original kept dt). The max and
// the target's logit are read from the dt logits (exact: widening keeps them), and the
// shift widens them to fp32 on the way: no fp32 copy of the logits is made first. At one
// rank on CUDA the whole loss is ATen's fused cross-entropy on the dt logits (its softmax
// works in fp32 and rounds the log-probability once), 0.58 ms against the three passes'
// 3.28 at --size large, with the same bf16 losses (bench/vocab_ce_probe.py). Elsewhere the
// passes stay: ATen has no one-pass fp32 log-sum-exp of dt rows (logsumexp is composite,
// and log_softmax from bf16 rounds what it returns), and the CPU kernel rounds inside.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct VocabParallelCrossEntropy : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& target = in["target"];
    const at::Tensor& logits = in["logits"];
    int64_t vl = logits.size(-1), start = ctx.rank() * vl;
    if (ctx.world() == 1 && logits.is_cuda()) {  // every target is in this rank's slice
      // at::cross_entropy_loss as it computes it (nll_loss of log_softmax), into the output.
      at::Tensor x = logits.reshape({-1, vl}), loss = out["loss"].view({-1});
      at::nll_loss_out(loss, at::log_softmax(x, 1, x.scalar_type()), target.reshape({-1}), {}, at::Reduction::None);
      return;
    }

    at::Tensor zmax = logits.amax(-1).to(at::kFloat);
    ctx.comm().all_reduce(zmax, pkb::ReduceOp::Max);

    at::Tensor outside = (target < start).logical_or(target >= start + vl);
    at::Tensor local = (target - start).masked_fill(outside, 0);
    at::Tensor picked =
        (logits.gather(-1, local.unsqueeze(-1)).squeeze(-1).to(at::kFloat) - zmax).masked_fill(outside, 0.0);
    ctx.comm().all_reduce(picked);

    at::Tensor sum_exp = at::sub(logits, zmax.unsqueeze(-1)).exp_().sum(-1);  // dt - fp32 is fp32
    ctx.comm().all_reduce(sum_exp);
    out["loss"].copy_(sum_exp.log() - picked);  // rounded to dt as copied
  }
};

}  // namespace

PKB_REFERENCE("tp_vocab_parallel_cross_entropy", VocabParallelCrossEntropy);
