// reduce_scatter_tensor(SUM) along dim 0.
#include "pkb/reference.hpp"

namespace {

struct ReduceScatter : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor y = at::empty({ctx.size("M"), ctx.size("N")}, ctx.options());
    ctx.comm().reduce_scatter(y, in["x"]);
    out.set({y});
  }
};

}  // namespace

PKB_REFERENCE("coll_reducescatter", ReduceScatter);
