// all_to_all_single, equal splits along dim 0.
#include "pkb/reference.hpp"

namespace {

struct AllToAll : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    ctx.comm().all_to_all(out["y"], in["x"]);
  }
};

}  // namespace

PKB_REFERENCE("coll_alltoall", AllToAll);
