// References of the problems the gallery of bad candidates needs besides the real ones.
#include "pkb/reference.hpp"

namespace {

struct AllReduce : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    at::Tensor y = in["x"].clone();
    ctx.comm().all_reduce(y);
    out.set({y});
  }
};

// Nothing to compute: the timing of a candidate that does nothing is pkb's own overhead.
struct Empty : pkb::Reference {
  void run(pkb::Ctx&, const pkb::Inputs& in, pkb::Outputs& out) override { out.set({in["x"].new_empty({0})}); }
};

}  // namespace

PKB_REFERENCE("test_roofline_lie", AllReduce);
PKB_REFERENCE("test_empty", Empty);
