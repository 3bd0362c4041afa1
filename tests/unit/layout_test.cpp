// The harness layout a candidate rank and its judge both compute: the gate's flags, then
// slots by region, the largest size any rank needs. No torch, no ranks.
#include <gtest/gtest.h>

#include "eval/layout.hpp"
#include "spec/spec.hpp"

using namespace pkb;

namespace {

spec::ProblemSpec load(const std::string& slug) {
  return spec::load_spec(std::string(PKB_SOURCE_DIR) + "/problems/" + slug + ".toml");
}

}  // namespace

TEST(Layout, AllReduceGateThenTheSet) {
  spec::ProblemSpec s = load("coll_allreduce");  // x and y: M x N of dt
  auto v = s.vars_for("default", 4, 0);
  size_t bytes = static_cast<size_t>(v["M"] * v["N"]) * 2;  // bf16
  eval::HarnessLayout l = eval::plan_harness(s, "default", 4, "bf16");
  ASSERT_EQ(l.in.size(), 1u);
  ASSERT_EQ(l.out.size(), 1u);
  // The gate's three flags first, each on a cache line of its own.
  EXPECT_EQ(eval::kGateReady - eval::kGateGo, 128u);
  EXPECT_EQ(eval::kGateDone - eval::kGateReady, 128u);
  EXPECT_LE(eval::kGateDone + 4, eval::kGateBytes);
  EXPECT_EQ(l.in[0].offset, eval::kGateBytes);
  EXPECT_EQ(l.in[0].bytes, bytes);
  EXPECT_EQ(l.out[0].offset, eval::kGateBytes + bytes);
  EXPECT_EQ(l.set_device, eval::kGateBytes + 2 * bytes);
  EXPECT_EQ(l.set_host, 0u);
  EXPECT_EQ(l.device_bytes(), l.set_device);  // no captures here: they are the judge's
  EXPECT_EQ(l.output_bytes(), bytes);
  // The element type follows dt.
  EXPECT_EQ(eval::plan_harness(s, "default", 4, "fp32").in[0].bytes, 2 * bytes);
}

TEST(Layout, SlotsHoldTheLargestRanksShapeRoundedUp) {
  spec::ProblemSpec s = load("coll_allgather");  // x: the rank's part; y: W parts
  for (int w : {1, 3, 8}) {
    eval::HarnessLayout l = eval::plan_harness(s, "default", w, s.dtype);
    size_t most = 0;
    for (int q = 0; q < w; ++q) most = std::max(most, spec::bytes_of(s.inputs[0], s.vars_for("default", w, q), s.dtype));
    EXPECT_GE(l.in[0].bytes, most);
    EXPECT_LT(l.in[0].bytes, most + eval::kSlotAlign);
    EXPECT_EQ(l.in[0].bytes % eval::kSlotAlign, 0u);
    EXPECT_EQ(l.out[0].offset % eval::kSlotAlign, 0u);
  }
}

TEST(Layout, HostTensorsGoToTheHostRegion) {
  spec::ProblemSpec s = load("ep_moe_dispatch_permute");
  eval::HarnessLayout l = eval::plan_harness(s, "default", 2, s.dtype);
  bool any_host = false;
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    EXPECT_EQ(l.out[i].host, s.outputs[i].host);
    any_host = any_host || s.outputs[i].host;
  }
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    EXPECT_EQ(l.in[i].host, s.inputs[i].host);
    any_host = any_host || s.inputs[i].host;
  }
  ASSERT_TRUE(any_host) << "the problem was chosen for its host tensors";
  EXPECT_GT(l.set_host, 0u);
  EXPECT_EQ(l.host_bytes(), l.set_host);
  // Every slot fits in its region's set; one capture holds every output of both regions.
  for (auto& slot : l.in) EXPECT_LE(slot.offset + slot.bytes, slot.host ? l.set_host : l.set_device);
  size_t outputs = 0;
  for (auto& slot : l.out) {
    EXPECT_LE(slot.offset + slot.bytes, slot.host ? l.set_host : l.set_device);
    outputs += slot.bytes;
  }
  EXPECT_EQ(l.output_bytes(), outputs);
}

TEST(Layout, CapturesWithinTheirBudget) {
  EXPECT_EQ(eval::captures_for(1000, 1 << 20, 100, 20), 100);  // all fit
  EXPECT_EQ(eval::captures_for(1000, 50000, 100, 20), 50);     // as many as fit
  EXPECT_EQ(eval::captures_for(1 << 30, 1 << 20, 100, 20), 20);  // never under the floor
  EXPECT_EQ(eval::captures_for(1 << 30, 1 << 20, 7, 20), 7);     // nor over the calls
}
