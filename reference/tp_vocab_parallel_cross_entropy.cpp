// Megatron-LM vocab-parallel cross-entropy, forward: rank r holds logits (B, S, Vl) for
// vocab slice [r*Vl, (r+1)*Vl) and the (shared) targets (B, S). Three all-reduces (MAX of
// the row maxima, SUM of the target logit, SUM of exp) give every rank the per-token loss
// log(sum_v exp(z_v - max)) - (z_target - max), returned in dt.
// Origin: ParallelKernelBench 73_vocab_parallel_cross_entropy_loss
// (megatron/core/tensor_parallel/cross_entropy.py, _VocabParallelCrossEntropy).
// Deviations: the logits are not modified in place (the original subtracted the max from
// its input); the math runs in fp32 as Megatron's does (the original kept dt).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct VocabParallelCrossEntropy : pkb::Reference {
  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    const at::Tensor& target = in["target"];
    at::Tensor z = in["logits"].to(at::kFloat);
    int64_t vl = z.size(-1), start = ctx.rank() * vl;

    at::Tensor zmax = std::get<0>(z.max(-1));
    ctx.comm().all_reduce(zmax, pkb::ReduceOp::Max);
    z = z - zmax.unsqueeze(-1);

    at::Tensor outside = (target < start).logical_or(target >= start + vl);
    at::Tensor local = (target - start).masked_fill(outside, 0);
    at::Tensor picked = z.gather(-1, local.unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0.0);
    ctx.comm().all_reduce(picked);

    at::Tensor sum_exp = z.exp().sum(-1);
    ctx.comm().all_reduce(sum_exp);
    return {(sum_exp.log() - picked).to(in["logits"].scalar_type())};
  }
};

}  // namespace

PKB_REFERENCE("tp_vocab_parallel_cross_entropy", VocabParallelCrossEntropy);
