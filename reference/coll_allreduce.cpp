// all_reduce(SUM) over every rank.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct AllReduce : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    ctx.comm().all_reduce_into(out["y"], in["x"]);
  }
};

}  // namespace

PKB_REFERENCE("coll_allreduce", AllReduce);
