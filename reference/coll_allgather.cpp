// all_gather_into_tensor: y[r] = x of rank r.
#include "pkb/reference.hpp"

namespace {

struct AllGather : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["x"];
    at::Tensor y = at::empty({ctx.world(), x.size(0), x.size(1)}, x.options());
    ctx.comm().all_gather(y, x);
    out.set({y});
  }
};

}  // namespace

PKB_REFERENCE("coll_allgather", AllGather);
