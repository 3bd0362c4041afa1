// broadcast from the root.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct Broadcast : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    ctx.comm().broadcast_into(out["y"], in["x"], static_cast<int>(ctx.size("root")));
  }
};

}  // namespace

PKB_REFERENCE("coll_broadcast", Broadcast);
