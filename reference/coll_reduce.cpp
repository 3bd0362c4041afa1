// reduce(SUM) onto the root; the others keep their input.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct Reduce : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    ctx.comm().reduce_into(out["y"], in["x"], static_cast<int>(ctx.size("root")));
  }
};

}  // namespace

PKB_REFERENCE("coll_reduce", Reduce);
