// A rank's parts that need no other process: comparing outputs, poisoning them, the
// symmetric heap's allocations, and the pkb_ctx a candidate is handed.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "device/device.hpp"
#include "eval/candidate.hpp"
#include "eval/compare.hpp"
#include "heap/heap.hpp"
#include "pkb/reference.hpp"
#include "launch/client.hpp"
#include "spec/spec.hpp"
#include "tensor/init.hpp"

#include <ATen/CPUGeneratorImpl.h>

using namespace pkb;

namespace {

// A heap over plain host buffers, laid out as a real one: regions and pads per rank.
class TestHeap : public heap::Heap {
 public:
  TestHeap(int rank, int world, size_t bytes) : store_(world, std::vector<char>(bytes)), pads_store_(world, std::vector<uint32_t>(64)) {
    rank_ = rank;
    world_ = world;
    bytes_ = bytes;
    pad_bytes_ = 64 * sizeof(uint32_t);
    for (int r = 0; r < world; ++r) {
      bases_.push_back(store_[r].data());
      pads_.push_back(pads_store_[r].data());
    }
  }

 private:
  std::vector<std::vector<char>> store_;
  std::vector<std::vector<uint32_t>> pads_store_;
};

}  // namespace

TEST(Compare, ValuesWithinTolerancePassAndTheFirstBadIndexIsNamed) {
  at::Tensor want = at::arange(12, at::kFloat).reshape({3, 4});
  EXPECT_TRUE(eval::compare(want.clone(), want, 0, 0).ok);
  at::Tensor got = want + 0.05;
  EXPECT_TRUE(eval::compare(got, want, 0.1, 0).ok);
  got[2][1] = 100;
  eval::Mismatch m = eval::compare(got, want, 0.1, 0);
  EXPECT_FALSE(m.ok);
  EXPECT_EQ(m.reason, "values");
  EXPECT_EQ(m.bad, 1);
  EXPECT_EQ(m.first_index, (std::vector<int64_t>{2, 1}));
  EXPECT_NEAR(m.max_abs, 91, 1e-4);
}

TEST(Compare, NanDtypeShapeAndComplexParts) {
  at::Tensor want = at::ones({4});
  at::Tensor nan = want.clone();
  nan[3] = NAN;
  EXPECT_EQ(eval::compare(nan, want, 1, 1).reason, "nan");
  EXPECT_TRUE(eval::compare(nan, nan, 0, 0).ok);  // NaN where the reference has NaN
  EXPECT_EQ(eval::compare(want.to(at::kDouble), want, 1, 1).reason, "dtype");
  EXPECT_EQ(eval::compare(at::ones({2, 2}), want, 1, 1).reason, "shape");
  at::Tensor z = at::complex(at::ones({3}), at::zeros({3}));
  at::Tensor z_im = at::complex(at::ones({3}), at::ones({3}));
  EXPECT_FALSE(eval::compare(z_im, z, 0.5, 0).ok);  // the imaginary part counts
  EXPECT_FALSE(eval::compare(at::tensor({1, 2}, at::kInt), at::tensor({1, 3}, at::kInt), 0, 0).ok);
}

// Asked only whether an output is right (the judges' wait for late work asks again and
// again): the same verdict, reason and count as the full comparison, without the diagnosis.
TEST(Compare, AVerdictWithoutExplanationAgreesAndSkipsTheDiagnosis) {
  at::Tensor want = at::arange(12, at::kFloat).reshape({3, 4});
  at::Tensor got = want.clone();
  got[2][1] = 100;
  got[0][3] = NAN;
  for (double atol : {0.1, 1000.0}) {
    eval::Mismatch full = eval::compare(got, want, atol, 0), bare = eval::compare(got, want, atol, 0, 0, false);
    EXPECT_EQ(bare.ok, full.ok);
    EXPECT_EQ(bare.reason, full.reason);  // nan, whatever atol: a NaN never passes
    EXPECT_EQ(bare.bad, full.bad);
    EXPECT_FALSE(full.detail.empty());
    EXPECT_TRUE(bare.detail.empty());
    EXPECT_TRUE(bare.first_index.empty());
    EXPECT_EQ(bare.max_abs, 0);
  }
  EXPECT_TRUE(eval::compare(want.clone(), want, 0, 0, 0, false).ok);
  at::Tensor off = want.clone();
  off[1][1] = 50;
  EXPECT_TRUE(eval::compare(off, want, 0, 0, 1, false).ok);  // within the allowance
  EXPECT_EQ(eval::compare(off, want, 0, 0, 0, false).reason, "values");
  EXPECT_FALSE(eval::compare(at::tensor({1, 2}, at::kInt), at::tensor({1, 3}, at::kInt), 0, 0, 0, false).ok);
}

TEST(Compare, AMismatchAllowanceCountsElementsAndNeverPassesNan) {
  at::Tensor want = at::zeros({1000});
  at::Tensor got = want.clone();
  got[7] = 1;
  got[500] = -1;
  EXPECT_FALSE(eval::compare(got, want, 0.1, 0).ok);
  EXPECT_FALSE(eval::compare(got, want, 0.1, 0, 1).ok);
  eval::Mismatch m = eval::compare(got, want, 0.1, 0, 2);
  EXPECT_TRUE(m.ok);
  EXPECT_EQ(m.bad, 2);
  got[9] = NAN;
  EXPECT_EQ(eval::compare(got, want, 0.1, 0, 10).reason, "nan");
  // Through the spec: a fraction of the elements, rounded down.
  spec::TensorSpec out;
  out.atol = 0.1;
  out.rtol = 0;
  out.mismatch = 2e-3;  // 2 of 1000
  got[9] = 0;
  EXPECT_TRUE(eval::compare_output(out, got, want).ok);
  out.mismatch = 1.9e-3;  // 1 of 1000
  eval::Mismatch one = eval::compare_output(out, got, want);
  EXPECT_FALSE(one.ok);
  EXPECT_NE(one.detail.find("2 of 1000 elements differ (1 may)"), std::string::npos) << one.detail;
}

TEST(Poison, FloatsBecomeNanIntegersAlternateBetweenExtremes) {
  at::Tensor f = at::zeros({5});
  eval::poison(f, false);
  EXPECT_TRUE(f.isnan().all().item<bool>());
  at::Tensor i = at::zeros({5}, at::kInt);
  eval::poison(i, false);
  int a = i[0].item<int>();
  eval::poison(i, true);
  int b = i[0].item<int>();
  EXPECT_NE(a, b);
  EXPECT_TRUE(a == std::numeric_limits<int>::max() || a == std::numeric_limits<int>::min()) << a;
}

TEST(Heap, AllocationsAreAlignedSymmetricAndBounded) {
  TestHeap h(0, 2, 4096);
  size_t a = h.allocate(10), b = h.allocate(100);
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b % 256, 0u);
  EXPECT_GE(b, 10u);
  EXPECT_THROW(h.allocate(8192), std::exception);
  TestHeap other(1, 2, 4096);
  other.allocate(10);
  other.allocate(100);
  EXPECT_EQ(h.layout(), other.layout());  // the same calls on every rank: the same digest
  other.allocate(1);
  EXPECT_NE(h.layout(), other.layout());
}

TEST(CandidateCtx, SymmAllocInInitOnlyPeerPointersAndArgs) {
  spec::ProblemSpec s = spec::load_spec(std::string(PKB_SOURCE_DIR) + "/problems/coll_allreduce.toml");
  TestHeap h(1, 2, 1 << 16);
  launch::Client client(-1);  // never asked: no barrier is called
  eval::CandidateCtx cc(h, client, -1, nullptr, nullptr, s, s.vars_for("default", 2, 1));
  pkb_ctx* ctx = cc.get();
  EXPECT_EQ(ctx->rank, 1);
  EXPECT_EQ(ctx->world, 2);
  void* mine = ctx->symm_alloc(ctx, 1024);
  ASSERT_NE(mine, nullptr);
  EXPECT_EQ(mine, h.base(1));
  char* theirs = static_cast<char*>(ctx->peer_ptr(ctx, static_cast<char*>(mine) + 8, 0));
  EXPECT_EQ(theirs, static_cast<char*>(h.base(0)) + 8);
  int local = 0;
  EXPECT_EQ(ctx->peer_ptr(ctx, &local, 0), nullptr);  // not in the heap
  EXPECT_EQ(ctx->peer_ptr(ctx, mine, 2), nullptr);     // no such rank
  int found = 0;
  EXPECT_EQ(ctx->arg_int(ctx, "M", &found), 1024);
  EXPECT_TRUE(found);
  EXPECT_EQ(ctx->arg_int(ctx, "W", &found), 2);
  ctx->arg_int(ctx, "nope", &found);
  EXPECT_FALSE(found);
  cc.end_init();
  EXPECT_EQ(ctx->symm_alloc(ctx, 16), nullptr);
  EXPECT_NE(cc.take_error().find("outside pkb_init"), std::string::npos);
  EXPECT_EQ(cc.take_error(), "");
}

// A random input larger than one draw (2^26 elements) is drawn a chunk at a time, so its
// fp32 draw never needs twice the tensor's memory; a seed still gives the same values in
// every dtype, up to rounding, and the tail is as random as the head.
TEST(RandomInputs, ALargeTensorIsDrawnInChunksAlikeInEveryDtype) {
  spec::TensorSpec t;
  t.name = "x";
  t.shape = {{spec::Expr::parse("n")}};
  t.init = spec::Expr::parse("randn(2, 1)");
  const spec::Vars vars = {{"n", double((int64_t{1} << 26) + 4096)}};
  auto draw = [&](at::ScalarType type) {
    at::Generator gen = at::detail::createCPUGenerator(7);
    return tensor::make_input(t, vars, type, at::kCPU, gen);
  };
  at::Tensor half = draw(at::kBFloat16), full = draw(at::kFloat);
  ASSERT_EQ(half.scalar_type(), at::kBFloat16);
  ASSERT_EQ(half.numel(), (int64_t{1} << 26) + 4096);
  EXPECT_TRUE(at::allclose(half.to(at::kFloat), full, /*rtol=*/1.0 / 128, /*atol=*/1e-2));
  at::Tensor tail = full.narrow(0, int64_t{1} << 26, 4096);
  EXPECT_NEAR(tail.mean().item<double>(), 1.0, 0.15);
  EXPECT_NEAR(tail.std().item<double>(), 2.0, 0.15);
  EXPECT_FALSE(at::equal(tail, full.narrow(0, 0, 4096)));
}

// randint on the CPU device (a counter-based hash, not ATen's serial draw): every value in
// [lo, hi) and each about equally often, in every dtype it writes; a seed gives the same
// values, another seed others; the next draw of the same generator differs from the first.
TEST(RandomInputs, CpuIntegersAreUniformInTheirRangeAndReplayBySeed) {
  spec::TensorSpec t;
  t.name = "x";
  t.shape = {{spec::Expr::parse("n")}};
  t.init = spec::Expr::parse("randint(-3, 5)");
  const spec::Vars vars = {{"n", 80000.0}};
  for (at::ScalarType type : {at::kLong, at::kInt, at::kChar, at::kFloat, at::kBFloat16, at::kHalf, at::kDouble}) {
    at::Generator gen = at::detail::createCPUGenerator(11);
    at::Tensor a = tensor::make_input(t, vars, type, at::kCPU, gen), next = tensor::make_input(t, vars, type, at::kCPU, gen);
    ASSERT_EQ(a.scalar_type(), type);
    at::Tensor v = a.to(at::kLong);
    EXPECT_EQ(v.min().item<int64_t>(), -3) << c10::toString(type);
    EXPECT_EQ(v.max().item<int64_t>(), 4) << c10::toString(type);
    for (int64_t k = -3; k < 5; ++k) EXPECT_NEAR(v.eq(k).sum().item<int64_t>(), 10000, 500) << k;
    at::Generator again = at::detail::createCPUGenerator(11), other = at::detail::createCPUGenerator(12);
    EXPECT_TRUE(at::equal(a, tensor::make_input(t, vars, type, at::kCPU, again)));
    EXPECT_FALSE(at::equal(a, tensor::make_input(t, vars, type, at::kCPU, other)));
    EXPECT_FALSE(at::equal(a, next));
  }
  // A range the dtype cannot hold is ATen's error, as it was.
  t.init = spec::Expr::parse("randint(0, 300)");
  at::Generator gen = at::detail::createCPUGenerator(11);
  EXPECT_THROW(tensor::make_input(t, vars, at::kChar, at::kCPU, gen), c10::Error);
}

// A reference writes its outputs into tensors pkb made: in place (nothing copied), or by
// set(), which copies into the slot, narrows a data-dependent dim to what it got, and
// refuses a tensor of another type, place or shape, naming the output.
TEST(Outputs, AReferenceWritesInPlaceOrSetsWhatItMade) {
  pkb::Outputs out;
  out.add("y", at::zeros({4, 3}), {false, false});
  out.add("ids", at::full({5}, -1, at::kLong), {true});
  at::mul_out(out["y"], at::ones({4, 3}), at::full({4, 3}, 2.0));  // in place
  out.set(0, out.at(0));                                           // the slot itself: no copy
  EXPECT_EQ(out.copies(), 0);
  out.set("ids", at::arange(3, at::kLong));                        // a data-dependent dim comes out smaller
  EXPECT_EQ(out.copies(), 1);
  std::vector<at::Tensor> got = out.results();
  EXPECT_TRUE(at::equal(got[0], at::full({4, 3}, 2.0)));
  EXPECT_EQ(got[1].sizes().vec(), std::vector<int64_t>{3});
  EXPECT_TRUE(at::equal(got[1], at::arange(3, at::kLong)));
  EXPECT_EQ(out.at(1)[4].item<int64_t>(), -1);  // past the size: untouched
  out.reset_sizes();
  EXPECT_EQ(out.results()[1].size(0), 5);
  out.set_size(1, 0, 2);
  EXPECT_EQ(out.results()[1].size(0), 2);

  auto refused = [&](auto f, const std::string& why) {
    try {
      f();
      ADD_FAILURE() << "accepted: " << why;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused([&] { out.set(0, at::zeros({4, 3}, at::kDouble)); }, "'y' is Double");
  refused([&] { out.set(0, at::zeros({4, 2})); }, "'y' has shape");   // a fixed dim must match
  refused([&] { out.set(1, at::zeros({6}, at::kLong)); }, "'ids' has shape");  // over the capacity
  refused([&] { out.set({at::zeros({4, 3})}); }, "set 1 outputs");
  refused([&] { out.set_size(0, 1, 2); }, "not a data-dependent dim");
  refused([&] { out.set_size(1, 0, 9); }, "its capacity is 5");
}

// The process state the reference runs under, compared before and after: unchanged says
// nothing, a setting a candidate changed (torch's CPU threads, TF32) is named with both
// values.
TEST(ProcessState, WhatCodeInTheProcessChangedIsNamed) {
  const at::Device cpu(at::kCPU);
  auto before = pkb::device::process_state(cpu);
  EXPECT_EQ(pkb::device::state_changes(before, pkb::device::process_state(cpu)), "");
  const int threads = at::get_num_threads();
  const bool tf32 = at::globalContext().allowTF32CuBLAS();
  at::set_num_threads(threads == 1 ? 2 : 1);
  at::globalContext().setAllowTF32CuBLAS(!tf32);
  std::string changed = pkb::device::state_changes(before, pkb::device::process_state(cpu));
  at::set_num_threads(threads);
  at::globalContext().setAllowTF32CuBLAS(tf32);
  EXPECT_NE(changed.find("torch cpu threads: " + std::to_string(threads) + " -> "), std::string::npos) << changed;
  EXPECT_NE(changed.find("torch tf32 cublas: "), std::string::npos) << changed;
  EXPECT_EQ(pkb::device::state_changes(before, pkb::device::process_state(cpu)), "");
}
