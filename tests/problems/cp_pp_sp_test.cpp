// The context-, pipeline- and sequence-parallel problems (cp_*, pp_*, sp_*), each recomputed
// independently (tests/checks/cp.py, pp.py, sp.py) from what its reference saved on the CPU
// device (see expect_references_recomputed), one test a world size and size, and the two
// CPU candidates through pkb eval.
//
// CI time is the limit, so not every problem runs at every W: every problem runs at W = 4;
// W = 2 and W = 8 where the layout changes with W (the TP/PP/DP x CP grids: tp = pp = dp = 2
// with cp = 1 at W = 2, cp = 4 at W = 8; the CFG chains of the conv halo problem; the W > 4
// sizes of the MAGI attention; the ring's zig-zag at 2W = 16 chunks; the uneven all-gather),
// W = 1 for the ring (its local-only path), and the ring, its backward and the MAGI
// attention once at a size whose attention runs in 16 bits (the flash numerics the large
// presets use). Measured with ctest -j2 on 2 cores: 208 test-seconds for the 20 groups, 33
// of them the 16-bit MAGI case. Default sizes where the CPU manages them; smaller replaced
// sizes (the --size syntax) where the defaults are TFLOP-sized or slow to recompute in fp64,
// as each case says.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace pkbtest;

namespace {

std::string name_of(const Case& c) {
  return c.problem + "_W" + std::to_string(c.world) + (c.size.empty() ? "" : "_small");
}

// Smaller sizes, where the defaults are too heavy for the CPU device or for the fp64 check.
const char* kFftConv = "C=64,L=256,Lh=512";  // default: 1024 channels x 2W*2048 positions
const char* kMagiAttn = "C4=150,C8=200";     // default: 12150-token ranges, ~2 TFLOP a rank
const char* kConv2d = "C=64,Hlat=64,Wd=32";  // default: 1280 channels, ~0.25 TFLOP a rank
const char* kHyena = "C=256,L=256";          // default: 1024 channels x 2048 positions
const char* kVae4 = "T=6,H=40,Wd=30";        // default: a 720 x 720 x 24 video on every rank
const char* kVae8 = "T=3,H=60,Wd=50";        // 9 tiles over 8 ranks
const char* kKda = "S=32,NH=4,Dm=512";       // default: 16 heads, a 2304-wide projection
const char* kGdn = "S=32,DK=64,DV=128";      // default: 256 x 512 states (slow in the fp64 check)
const char* kVariable = "M=512,N=256";
// Attention calls of at least 2^24 query-key pairs run in 16 bits (pkb_cp::kDtPairs: flash
// numerics, fp16 forward, bf16 backward); the default sizes stay in fp32.
const char* kRingDt = "B=1,T=6144,H=4,D=64";     // 3072 tokens a rank at W = 2: both steps in dt
const char* kRingBwdDt = "B=1,T=3072,H=2,D=64";  // one 3072-token block a replica at W = 2
const char* kMagiDt = "C4=1200";                 // windows of >= 1200 keys x 12 heads a rank at W = 2

std::vector<Case> sequence_parallel() {
  return {{"sp_ulysses_all2all", 4, ""},
          {"sp_ulysses_allgather", 4, ""},
          {"sp_ulysses_allgather_variable", 4, ""},
          {"sp_ulysses_allgather_variable", 8, kVariable},
          {"sp_gather_seq_scatter_heads", 4, ""},
          {"sp_gather_heads_scatter_seq", 4, "T=13"},  // T = 13 pads (T = 16 never does)
          {"sp_gather_seq_scatter_heads_qkv", 4, ""}};
}

std::vector<Case> context_parallel() {
  return {{"cp_rope_allgather", 4, ""},
          {"cp_ulysses_attention", 4, ""},
          {"cp_ring_attention", 1, ""},
          {"cp_ring_attention", 4, ""},
          {"cp_ring_attention", 8, ""},
          {"cp_ring_attention", 2, kRingDt},
          {"cp_ring_attention_tp", 2, ""},
          {"cp_ring_attention_tp", 4, ""},
          {"cp_ring_attention_tp", 8, ""},
          {"cp_ring_attention_bwd_dp", 2, ""},
          {"cp_ring_attention_bwd_dp", 8, ""},
          {"cp_ring_attention_bwd_dp", 2, kRingBwdDt},
          {"cp_hyena_conv1d_halo", 4, kHyena},
          {"cp_hyena_fftconv_all2all", 4, kFftConv},
          {"cp_kda_attention_cp_tp", 2, kKda},
          {"cp_kda_attention_cp_tp", 8, kKda},
          {"cp_gated_deltanet_all2all", 4, kGdn},
          {"cp_magi_cso_attention", 4, kMagiAttn},
          {"cp_magi_cso_attention", 8, kMagiAttn},
          {"cp_magi_cso_attention", 2, kMagiDt},
          {"cp_magi_tile_vae_decode", 4, kVae4},
          {"cp_magi_tile_vae_decode", 8, kVae8},
          {"cp_conv2d_halo_exchange", 2, kConv2d},
          {"cp_conv2d_halo_exchange", 8, kConv2d}};
}

std::vector<Case> pipeline_parallel() {
  return {{"pp_ring_attention_pp", 2, ""}, {"pp_ring_attention_pp", 4, ""}, {"pp_ring_attention_pp", 8, ""}};
}

}  // namespace

class CpPpSpDryrun : public ::testing::TestWithParam<CaseGroup> {};

TEST_P(CpPpSpDryrun, ReferencesMatchAnIndependentRecomputation) { expect_references_recomputed(GetParam()); }

// One test a world size and size over the three families.
std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (auto part : {sequence_parallel(), context_parallel(), pipeline_parallel()}) out.insert(out.end(), part.begin(), part.end());
  return out;
}
INSTANTIATE_TEST_SUITE_P(ContextPipelineSequence, CpPpSpDryrun, ::testing::ValuesIn(group_cases(all_cases())),
                         [](const auto& info) { return info.param.name; });

auto case_name = [](const auto& info) { return name_of(info.param); };

// The CPU twins of the CUDA candidates (solutions_cuda/<slug>.cu): same algorithm and
// peer-pointer indexing over the host heap, so this checks the CUDA versions' indexing.
class CpPpSpCandidate : public ::testing::TestWithParam<Case> {};

TEST_P(CpPpSpCandidate, CpuTwinIsCorrect) {
  expect_cpu_candidate_correct(GetParam().problem, GetParam().world, GetParam().size);
}

INSTANTIATE_TEST_SUITE_P(ContextParallel, CpPpSpCandidate, ::testing::Values(Case{"cp_ring_attention", 4, ""}),
                         case_name);
INSTANTIATE_TEST_SUITE_P(SequenceParallel, CpPpSpCandidate,
                         ::testing::Values(Case{"sp_gather_seq_scatter_heads", 4, ""}), case_name);
