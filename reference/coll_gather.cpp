// gather onto the root.
#include "pkb/reference.hpp"

namespace {

struct Gather : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    int root = static_cast<int>(ctx.size("root"));
    at::Tensor y = at::empty({ctx.rank() == root ? ctx.world() : 0, ctx.size("M"), ctx.size("N")}, ctx.options());
    ctx.comm().gather(y, in["x"], root);
    out.set({y});
  }
};

}  // namespace

PKB_REFERENCE("coll_gather", Gather);
