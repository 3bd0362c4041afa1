// Departures from the original that a user comparing with it must be told, and claims
// about tolerances: each is in its spec, and `pkb show` prints it.
#include <gtest/gtest.h>

#include <ostream>

#include "support.hpp"

using namespace pkbtest;

namespace {

struct Departure {
  std::string problem;
  std::vector<std::string> said;  // phrases of the spec's deviations
};

void PrintTo(const Departure& c, std::ostream* os) { *os << c.problem; }

class Deviations : public ::testing::TestWithParam<Departure> {};

TEST_P(Deviations, PkbShowPrintsThem) {
  const Departure& d = GetParam();
  PkbRun r = run_pkb({"show", d.problem});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Deviations from the original")) << r.out;
  for (auto& s : d.said) EXPECT_TRUE(contains(r.out, s)) << d.problem << ": no '" << s << "' in\n" << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Problems, Deviations,
    ::testing::Values(
        Departure{"rec_sharded_embedding_lookup", {"the original never restores the input order"}},
        Departure{"cp_ulysses_attention", {"rank's heads, never across the sequence"}},
        Departure{"misc_gsplat_projection_all2all",
                  {"Gaussian offset of the rank the pair is sent to", "the original's come out int64"}},
        Departure{"ep_load_balancing_loss", {"0-dim fp32 tensor", "the token fractions and the product sum in fp32"}},
        Departure{"dp_importance_sampling_loss", {"metrics (5,) fp32: the dtypes the original returns"}},
        Departure{"cp_hyena_fftconv_all2all", {"atol = 6e-2, rtol = 2e-2 leave", "atol = 6e-2\nrtol = 2e-2"}},
        Departure{"dp_dinov2_knn", {"ties = \"labels of equal similarity in any order"}},
        Departure{"gnn_negative_scoring_rank", {"among equal scores every place of the"}}),
    [](const ::testing::TestParamInfo<Departure>& i) { return i.param.problem; });

}  // namespace
