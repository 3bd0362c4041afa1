// References of the problems the gallery of bad candidates needs besides the real ones.
#include "pkb/reference.hpp"

namespace {

struct AllReduce : pkb::Reference {
  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    at::Tensor y = in["x"].clone();
    ctx.comm().all_reduce(y);
    return {y};
  }
};

}  // namespace

PKB_REFERENCE("test_roofline_lie", AllReduce);
