// Ulysses all_gather_into_tensor: every rank returns [x_0; ...; x_{W-1}] (W*M, N).
// Origin: ParallelKernelBench 34_ulysses_all_gather_into_tensor_primitive (VeOmni).
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct UlyssesAllGather : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    ctx.comm().all_gather(out["y"], in["x"].contiguous());
  }
};

}  // namespace

PKB_REFERENCE("sp_ulysses_allgather", UlyssesAllGather);
