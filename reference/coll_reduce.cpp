// reduce(SUM) onto the root; the others keep their input.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct Reduce : pkb::Reference {
  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    at::Tensor y = at::empty_like(in["x"]);
    ctx.comm().reduce_into(y, in["x"], static_cast<int>(ctx.size("root")));
    return {y};
  }
};

}  // namespace

PKB_REFERENCE("coll_reduce", Reduce);
