// The graph, scientific, recommendation and rendering/sorting problems, each recomputed
// independently (tests/checks/{gnn,sci,rec,misc}.py) from what its reference saved on the
// CPU device (see expect_references_recomputed), one test a world size and size.
//
// Every problem at W = 2, 4 and 8 (all allow them; W = 1 is left out for the CI budget).
// Sizes replaced by
// smaller ones are marked: the default sizes stay the original's, but a few are too heavy
// for the CPU device in the CI budget (the GPU run covers the defaults).
#include <gtest/gtest.h>

#include "support.hpp"

using namespace pkbtest;

namespace {

std::vector<Case> each_world(const std::string& p, std::vector<int> worlds, const std::string& size = "") {
  std::vector<Case> out;
  for (int w : worlds) out.push_back({p, w, size});
  return out;
}

std::vector<Case> join(std::vector<std::vector<Case>> parts) {
  std::vector<Case> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<Case> gnn_cases() {
  return join({
      each_world("gnn_neighbor_sampling", {2, 4, 8}),
      each_world("gnn_feature_exchange_all2all", {2, 4, 8}),
      each_world("gnn_feature_exchange_all2all_bwd", {2, 4, 8}),
      each_world("gnn_sparse_embedding_all2all", {2, 4, 8}),
      // a 64K-node table instead of the default 1M (256 MB of randn per trial on the CPU),
      // 2048 queries per rank instead of 20000 (the fp64 recomputation's GEMMs)
      each_world("gnn_feature_fetch_projection", {2, 4, 8}, "V0=65536,Q0=2048"),
      each_world("gnn_negative_scoring_rank", {2, 4, 8}),
  });
}

std::vector<Case> sci_cases() {
  return join({
      // 4 fields of 256 x 512 instead of 16 of 1024 x 1024; W = 1 is one R2C transform
      each_world("sci_distributed_rfft2", {1, 2, 4, 8}, "M=256,N=512"),
      // the default all-gathers a 166 MB padded spectrum on every rank: too much for the
      // CPU device at W = 8 in the CI budget
      each_world("sci_distributed_irfft2", {1, 2, 4, 8}, "C=2,H=96,X=192"),  // W = 1: one C2R
      // a batch of 4 instead of 32
      each_world("sci_spherical_disco_conv", {2, 4, 8}, "B=4"),
      // blocks of 256 instead of 1024 (P is 64 MB per rank at the default)
      each_world("sci_kalman_filter_optimizer", {2, 4, 8}, "BS=256"),
  });
}

std::vector<Case> rec_cases() {
  return join({
      each_world("rec_sharded_embedding_lookup", {2, 4, 8}),
      each_world("rec_torchrec_kjt_all2all", {2, 4, 8}),
  });
}

std::vector<Case> misc_cases() {
  return join({
      each_world("misc_gsplat_projection_all2all", {2, 4, 8}),
      each_world("misc_sample_sort", {2, 4, 8}),
  });
}

}  // namespace

class Dryrun : public ::testing::TestWithParam<CaseGroup> {};

TEST_P(Dryrun, ReferencesMatchAnIndependentRecomputation) { expect_references_recomputed(GetParam()); }

// The CPU twins of the CUDA candidates (solutions_cpu/<slug>.cpp), which run the same
// peer-pointer indexing on the CPU device: correct at W = 4 over a few trials and timed calls.
struct CandidateCase {
  std::string problem, size;
};

class CpuCandidate : public ::testing::TestWithParam<CandidateCase> {};

TEST_P(CpuCandidate, IsCorrect) { expect_cpu_candidate_correct(GetParam().problem, 4, GetParam().size); }

INSTANTIATE_TEST_SUITE_P(Recommendation, CpuCandidate,
                         ::testing::Values(CandidateCase{"rec_sharded_embedding_lookup", ""}),
                         [](const auto& info) { return info.param.problem; });
// 4 fields of 256 x 512: the twin's own FFT is slow at the default 16 x 1024 x 1024
INSTANTIATE_TEST_SUITE_P(Scientific, CpuCandidate,
                         ::testing::Values(CandidateCase{"sci_distributed_rfft2", "M=256,N=512"}),
                         [](const auto& info) { return info.param.problem; });

// One test a world size and size over all four families.
INSTANTIATE_TEST_SUITE_P(GraphSciRecMisc, Dryrun,
                         ::testing::ValuesIn(group_cases(join({gnn_cases(), sci_cases(), rec_cases(), misc_cases()}))),
                         [](const auto& info) { return info.param.name; });
