// scatter from the root: rank r gets x_root[r].
#include "pkb/reference.hpp"

namespace {

struct Scatter : pkb::Reference {
  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    at::Tensor y = at::empty({ctx.size("M"), ctx.size("N")}, ctx.options());
    ctx.comm().scatter(y, in["x"], static_cast<int>(ctx.size("root")));
    return {y};
  }
};

}  // namespace

PKB_REFERENCE("coll_scatter", Scatter);
