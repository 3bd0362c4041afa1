// broadcast from the root.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct Broadcast : pkb::Reference {
  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    at::Tensor y = at::empty_like(in["x"]);
    ctx.comm().broadcast_into(y, in["x"], static_cast<int>(ctx.size("root")));
    return {y};
  }
};

}  // namespace

PKB_REFERENCE("coll_broadcast", Broadcast);
