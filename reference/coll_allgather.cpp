// all_gather_into_tensor: y[r] = x of rank r.
#include "pkb/reference.hpp"

namespace {

struct AllGather : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["x"];
    ctx.comm().all_gather(out["y"], x);
  }
};

}  // namespace

PKB_REFERENCE("coll_allgather", AllGather);
