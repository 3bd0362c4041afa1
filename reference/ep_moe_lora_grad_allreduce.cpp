// Gradient sync of an expert-parallel group GEMM's LoRA factors (VeOmni, inferred): every
// rank returns the sums over all ranks of its three LoRA gradients (all-reduce SUM in dt).
// Origin: ParallelKernelBench 30_moe_epgroupgemm_lora_backward.
// Deviation: the sums are new outputs; the original reduced its inputs in place.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct LoraGradAllReduce : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    for (const char* name : {"grad_fc1_1_lora_A", "grad_fc1_2_lora_A", "grad_fc2_lora_B"})
      ctx.comm().all_reduce_into(out[name], in[name]);  // the outputs are named as the inputs
  }
};

}  // namespace

PKB_REFERENCE("ep_moe_lora_grad_allreduce", LoraGradAllReduce);
