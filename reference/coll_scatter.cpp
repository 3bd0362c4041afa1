// scatter from the root: rank r gets x_root[r].
#include "pkb/reference.hpp"

namespace {

struct Scatter : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor y = at::empty({ctx.size("M"), ctx.size("N")}, ctx.options());
    ctx.comm().scatter(y, in["x"], static_cast<int>(ctx.size("root")));
    out.set({y});
  }
};

}  // namespace

PKB_REFERENCE("coll_scatter", Scatter);
