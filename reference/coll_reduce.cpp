// reduce(SUM) onto the root; the others keep their input.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct Reduce : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor y = at::empty_like(in["x"]);
    ctx.comm().reduce_into(y, in["x"], static_cast<int>(ctx.size("root")));
    out.set({y});
  }
};

}  // namespace

PKB_REFERENCE("coll_reduce", Reduce);
