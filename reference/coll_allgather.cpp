// all_gather_into_tensor: y[r] = x of rank r.
#include "pkb/reference.hpp"

namespace {

struct AllGather : pkb::Reference {
  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    const at::Tensor& x = in["x"];
    at::Tensor y = at::empty({ctx.world(), x.size(0), x.size(1)}, x.options());
    ctx.comm().all_gather(y, x);
    return {y};
  }
};

}  // namespace

PKB_REFERENCE("coll_allgather", AllGather);
