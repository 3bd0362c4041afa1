// An exact reference (issue 51): every reference writes its results into the output slots
// pkb gives it (in place: at::*_out, the communicator's *_into and destination forms, a
// copy_ that is its last step) rather than setting a tensor it made, which costs a copy that
// a candidate is then timed against. `pkb dryrun --json` counts, per problem, the outputs
// its reference copied in (Outputs::set); only the references of kCopies may copy, each as
// many outputs as listed, the reason beside it.
//
// Every problem once, one trial, on the CPU device, at the W and sizes of every_problem()
// (W = 1 and the smallest W >= 2, small sizes for the heavy ones), one pkb call a group.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace pkbtest;
using json = nlohmann::json;

namespace {

// The references whose last op can only return a new tensor, with the outputs they copy.
const std::map<std::string, int> kCopies = {
    // at::conv2d (cuDNN) has no out= form.
    {"cp_conv2d_halo_exchange", 1},
    // DDP's three flat buckets (parameters, exp_avg, exp_avg_sq): three broadcasts and one
    // fused Adam over them, then split into the twelve per-tensor outputs.
    {"dp_ddp_adam_step", 12},
    // at::embedding_bag (the weighted gather-sum) has no out= form.
    {"ep_moe_combine_unpermute", 1},
    // The four parameters come from one all-gather of the flat parameters (the Adam state
    // is updated in its outputs).
    {"fsdp_zero1_adam_step", 4},
    {"fsdp_zero2_adam_step", 4},
    // ATen's fused RMSNorm has no out= form.
    {"tp_reducescatter_rmsnorm", 1},
};

}  // namespace

class ReferenceCopiesDryrun : public ::testing::TestWithParam<CaseGroup> {};

TEST_P(ReferenceCopiesDryrun, OnlyTheListedReferencesCopyAnOutput) {
  const CaseGroup& g = GetParam();
  std::string out = temp_dir("copies-" + g.name) + "/copies.json";
  std::vector<std::string> args = {"dryrun", "--trials", "1", "--device", "cpu", "-w", std::to_string(g.world), "--json",
                                   out, "-p"};
  args.insert(args.end(), g.problems.begin(), g.problems.end());
  if (!g.size.empty()) args.insert(args.end(), {"--size", g.size});
  for (auto& f : problem_dtype_flags()) args.push_back(f);
  PkbRun r = run_pkb(args, 1500);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::ifstream f(out);
  json records = json::parse(f);
  if (!records.is_array()) records = json::array({records});  // one problem: its record alone
  ASSERT_EQ(records.size(), g.problems.size()) << r.out;
  for (size_t k = 0; k < records.size(); ++k) {
    const std::string& p = g.problems[k];
    EXPECT_EQ(records[k]["problem"], p);
    auto it = kCopies.find(p);
    EXPECT_EQ(records[k]["copies"], it == kCopies.end() ? 0 : it->second) << p << " at W=" << g.world;
  }
  EXPECT_TRUE(survivors(r.tag).empty());
}

INSTANTIATE_TEST_SUITE_P(AllProblems, ReferenceCopiesDryrun, ::testing::ValuesIn(every_problem()),
                         [](const auto& info) { return info.param.name; });
