// broadcast from the root.
#include "pkb/reference.hpp"

namespace {

struct Broadcast : pkb::Reference {
  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    at::Tensor y = in["x"].clone();
    ctx.comm().broadcast(y, static_cast<int>(ctx.size("root")));
    return {y};
  }
};

}  // namespace

PKB_REFERENCE("coll_broadcast", Broadcast);
