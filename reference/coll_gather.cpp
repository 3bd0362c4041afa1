// gather onto the root.
#include "pkb/reference.hpp"

namespace {

struct Gather : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    int root = static_cast<int>(ctx.size("root"));
    ctx.comm().gather(out["y"], in["x"], root);  // (0, M, N) off the root
  }
};

}  // namespace

PKB_REFERENCE("coll_gather", Gather);
