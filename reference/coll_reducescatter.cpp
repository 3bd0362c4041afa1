// reduce_scatter_tensor(SUM) along dim 0.
#include "pkb/reference.hpp"

namespace {

struct ReduceScatter : pkb::Reference {
  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    at::Tensor y = at::empty({ctx.size("M"), ctx.size("N")}, ctx.options());
    ctx.comm().reduce_scatter(y, in["x"]);
    return {y};
  }
};

}  // namespace

PKB_REFERENCE("coll_reducescatter", ReduceScatter);
