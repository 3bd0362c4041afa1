// Vocab-parallel LM head at decode: every rank holds the same few token states h (T, H)
// and its vocab shard of the LM head, weight (Vl, H) and bias (Vl,); it computes its
// logits h @ weight^T + bias (T, Vl) and every rank returns the all-gathered logits
// (T, V), rank r's shard in columns [r*Vl, (r+1)*Vl).
// Origin: ParallelKernelBench 46_gemv_decode (TensorRT-LLM / vLLM style).
// Deviation: weight drawn with std 1/sqrt(H) so logits are O(1) (the original used std 1).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct LmHeadGemvAllGather : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor local = at::matmul(in["h"], in["weight"].t()) + in["bias"];  // (T, Vl)
    int64_t t = local.size(0), vl = local.size(1);
    at::Tensor parts = ctx.comm().all_gather(local);  // (W*T, Vl)
    out["logits"].view({t, ctx.world(), vl}).copy_(parts.view({ctx.world(), t, vl}).permute({1, 0, 2}));
  }
};

}  // namespace

PKB_REFERENCE("tp_lmhead_gemv_allgather", LmHeadGemvAllGather);
