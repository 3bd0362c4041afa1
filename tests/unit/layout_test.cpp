// The harness layout a candidate rank and its judge both compute: slots by region, the
// largest size any rank needs, captures after the set. No torch, no ranks.
#include <gtest/gtest.h>

#include "eval/layout.hpp"
#include "spec/spec.hpp"

using namespace pkb;

namespace {

spec::ProblemSpec load(const std::string& slug) {
  return spec::load_spec(std::string(PKB_SOURCE_DIR) + "/problems/" + slug + ".toml");
}

}  // namespace

TEST(Layout, AllReduceSetThenCaptures) {
  spec::ProblemSpec s = load("coll_allreduce");  // x and y: M x N of dt
  auto v = s.vars_for("default", 4, 0);
  size_t bytes = static_cast<size_t>(v["M"] * v["N"]) * 2;  // bf16
  eval::HarnessLayout l = eval::plan_harness(s, "default", 4, "bf16", 3);
  ASSERT_EQ(l.in.size(), 1u);
  ASSERT_EQ(l.out.size(), 1u);
  EXPECT_EQ(l.in[0].offset, 0u);
  EXPECT_EQ(l.in[0].bytes, bytes);
  EXPECT_EQ(l.out[0].offset, bytes);
  EXPECT_EQ(l.set_device, 2 * bytes);
  EXPECT_EQ(l.set_host, 0u);
  EXPECT_EQ(l.capture_device, bytes);
  EXPECT_EQ(l.device_bytes(), 5 * bytes);  // the set, then three captures
  EXPECT_EQ(l.capture_at(0, 0), 2 * bytes);
  EXPECT_EQ(l.capture_at(2, 0), 4 * bytes);
  EXPECT_EQ(l.output_bytes(), bytes);
  // The element type follows dt.
  EXPECT_EQ(eval::plan_harness(s, "default", 4, "fp32", 1).in[0].bytes, 2 * bytes);
}

TEST(Layout, SlotsHoldTheLargestRanksShapeRoundedUp) {
  spec::ProblemSpec s = load("coll_allgather");  // x: the rank's part; y: W parts
  for (int w : {1, 3, 8}) {
    eval::HarnessLayout l = eval::plan_harness(s, "default", w, s.dtype, 1);
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
  eval::HarnessLayout l = eval::plan_harness(s, "default", 2, s.dtype, 2);
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
  EXPECT_EQ(l.host_bytes(), l.set_host + 2 * l.capture_host);
  // Every slot fits in its region's set, and captures of the two regions line up.
  for (auto& slot : l.in) EXPECT_LE(slot.offset + slot.bytes, slot.host ? l.set_host : l.set_device);
  for (size_t i = 0; i < l.out.size(); ++i)
    EXPECT_LE(l.capture_at(1, i) + l.out[i].bytes, l.out[i].host ? l.host_bytes() : l.device_bytes());
}

TEST(Layout, CapturesWithinTheirBudget) {
  EXPECT_EQ(eval::captures_for(1000, 1 << 20, 100, 20), 100);  // all fit
  EXPECT_EQ(eval::captures_for(1000, 50000, 100, 20), 50);     // as many as fit
  EXPECT_EQ(eval::captures_for(1 << 30, 1 << 20, 100, 20), 20);  // never under the floor
  EXPECT_EQ(eval::captures_for(1 << 30, 1 << 20, 7, 20), 7);     // nor over the calls
}
