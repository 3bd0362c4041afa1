// reduce_scatter_tensor(SUM) along dim 0.
#include "pkb/reference.hpp"

namespace {

struct ReduceScatter : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    ctx.comm().reduce_scatter(out["y"], in["x"]);
  }
};

}  // namespace

PKB_REFERENCE("coll_reducescatter", ReduceScatter);
