// The Expert Parallel problems, each recomputed independently (tests/checks/ep.py) from
// what its reference saved on the CPU device (see expect_reference_recomputed).
//
// Every problem at W = 2, 4 and 8 where its constraints allow (ep_moe_balanced needs W >= 2;
// ep_moe_narrow excludes W = 2, where its EP groups are single ranks, so it runs at W = 1,
// 4 and 8), plus W = 1 for the cheap single-rank paths. Default sizes throughout.
#include <gtest/gtest.h>

#include "support.hpp"

using namespace pkbtest;

namespace {

struct EpCase {
  std::string problem;
  int world;
};

std::vector<EpCase> cases() {
  const char* problems[] = {"ep_load_balancing_loss",   "ep_moe_token_preprocess", "ep_moe_all2all",
                            "ep_moe_dispatch_permute",  "ep_moe_combine_unpermute", "ep_moe_lora_grad_allreduce",
                            "ep_fused_moe_fwd",         "ep_fused_moe_fwd_lora",   "ep_moe_wide",
                            "ep_moe_balanced"};
  std::vector<EpCase> out;
  for (const char* p : problems)
    for (int w : {2, 4, 8}) out.push_back({p, w});
  for (int w : {1, 4, 8}) out.push_back({"ep_moe_narrow", w});
  out.push_back({"ep_fused_moe_fwd", 1});
  return out;
}

}  // namespace

class EpDryrun : public ::testing::TestWithParam<EpCase> {};

TEST_P(EpDryrun, ReferenceMatchesAnIndependentRecomputation) {
  expect_reference_recomputed(GetParam().problem, GetParam().world);
}

INSTANTIATE_TEST_SUITE_P(ExpertParallel, EpDryrun, ::testing::ValuesIn(cases()), [](const auto& info) {
  return info.param.problem + "_W" + std::to_string(info.param.world);
});
