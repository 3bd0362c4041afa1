// ZeRO stage 2 training step with Adam: the flat parameters are broadcast from rank 0,
// each rank computes the MLP's gradients on its batch slice, the gradient of its part of
// the flat parameters comes from a reduce-scatter (divided by W), Adam (torch's fused
// kernel) updates the part, and the updated parts are all-gathered. Returns the full updated parameters and the
// part's exp_avg and exp_avg_sq (pkb_dp::ZeroAdamStep in dp_adam.hpp).
// Origin: ParallelKernelBench 42_zero2_optimizer_shard_grad.
// Deviations: Adam state and step count random per trial (a realistic state), nn.Linear
// init on every rank, the step count a host scalar; sizes n, din, hid, dout of their own.
#include "dp_adam.hpp"

namespace {

struct Zero2AdamStep : pkb_dp::ZeroAdamStep {
  Zero2AdamStep() : ZeroAdamStep(true) {}
};

}  // namespace

PKB_REFERENCE("fsdp_zero2_adam_step", Zero2AdamStep);
