// scatter from the root: rank r gets x_root[r].
#include "pkb/reference.hpp"

namespace {

struct Scatter : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    ctx.comm().scatter(out["y"], in["x"], static_cast<int>(ctx.size("root")));
  }
};

}  // namespace

PKB_REFERENCE("coll_scatter", Scatter);
