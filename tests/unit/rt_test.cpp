// A rank's parts that need no other process: comparing outputs, poisoning them, the
// symmetric heap's allocations, and the pkb_ctx a candidate is handed.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "eval/candidate.hpp"
#include "eval/compare.hpp"
#include "heap/heap.hpp"
#include "jobs/timing.hpp"
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

// A call's CPU time is the thread's, up to date at the call's end. Where a kernel brings a
// thread's getrusage figure up to date only at the scheduler's tick (the H200 machines'
// did: 40 us calls read 0), a meter reading it fails here; this machine's kernel may not.
TEST(HostMeter, ACallsCpuTimeIsItsOwnAndUpToDate) {
  pkb::jobs::timing::HostMeter m;
  m.start(pkb::eval::HostProbe{1, 2, 3, 4});
  for (int call = 0; call < 5; ++call) {
    m.call_started();
    auto t = std::chrono::steady_clock::now();
    volatile uint64_t x = 1;
    while (std::chrono::steady_clock::now() - t < std::chrono::microseconds(300)) x = x * 6364136223846793005ull + 1;
    m.call_returned();
  }
  pkb::eval::HostUse h = m.stop();
  ASSERT_EQ(h.enqueue_us.size(), 5u);
  ASSERT_EQ(h.enqueue_cpu_us.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_GE(h.enqueue_us[i], 300);
    EXPECT_LE(h.enqueue_cpu_us[i], h.enqueue_us[i] + 50) << "more CPU than wall time in call " << i;
  }
  // A busy call's CPU time is most of its wall time (a tick-stale reading is 0 in most calls).
  std::vector<double> cpu = h.enqueue_cpu_us;
  std::sort(cpu.begin(), cpu.end());
  EXPECT_GT(cpu[2], 150) << "the median call read " << cpu[2] << " us of CPU for 300 us of spinning";
  EXPECT_EQ(h.call_major_faults, 0);
  EXPECT_EQ(h.probe.launch_us, 2);  // the probe given to start() is the one reported
  EXPECT_GE(h.cpu, 0);
  EXPECT_GE(h.thp_anon_kib, 0) << "/proc/self/smaps_rollup read";
  EXPECT_GE(h.thp_file_kib, 0);
  // Each call's cycles and instructions where the machine counts them, none where it does not.
  if (pkb::jobs::timing::CpuCounters().ok()) {
    ASSERT_EQ(h.call_instructions.size(), 5u);
    ASSERT_EQ(h.call_cycles.size(), 5u);
    for (size_t i = 0; i < 5; ++i) EXPECT_GT(h.call_cycles[i], 1e5) << "300 us of spinning in call " << i;
  } else {
    EXPECT_TRUE(h.call_cycles.empty());
    EXPECT_TRUE(h.call_instructions.empty());
  }
}

// A candidate rank's span holds pkb's gate ops around the candidate's own call: the call's
// time is the candidate's alone (as the judges' is the reference's run), the rest the gate's.
TEST(HostMeter, ACandidateRanksCallIsItsOwnTheRestIsTheGates) {
  using Clock = std::chrono::steady_clock;
  auto spin = [](int us) {
    auto t = Clock::now();
    while (Clock::now() - t < std::chrono::microseconds(us)) {
    }
  };
  pkb::jobs::timing::HostMeter m;
  m.start();
  for (int call = 0; call < 3; ++call) {
    m.call_started();
    spin(200);  // the gate before
    auto begin = Clock::now();
    spin(400);  // the call
    m.call_ran(begin, Clock::now(), 7.5);
    spin(100);  // the gate after
    m.call_returned();
  }
  m.call_started();  // a judge's call: no call_ran, the whole span is the call
  spin(300);
  m.call_returned();
  pkb::eval::HostUse h = m.stop();
  ASSERT_EQ(h.enqueue_us.size(), 4u);
  ASSERT_EQ(h.gate_us.size(), 3u);
  ASSERT_EQ(h.copy_us.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_GE(h.enqueue_us[i], 400);
    EXPECT_LT(h.enqueue_us[i], 600) << "the gate's 300 us counted in call " << i;
    EXPECT_GE(h.gate_us[i], 300);
    EXPECT_EQ(h.copy_us[i], 7.5);
  }
  EXPECT_GE(h.enqueue_us[3], 300);
}

TEST(CpuCounters, CountTheThreadsWorkWhereTheMachineCounts) {
  pkb::jobs::timing::CpuCounters c;
  if (!c.ok()) {
    EXPECT_EQ(c.read().cycles, 0u);
    EXPECT_EQ(c.read().instructions, 0u);
    GTEST_SKIP() << "this machine counts no CPU cycles for a thread (no PMU in the VM, or perf_event_paranoid): "
                    "read() gives zeros, and timing.host's call_counters are null";
  }
  auto a = c.read();
  volatile uint64_t x = 1;
  for (int i = 0; i < 1000000; ++i) x = x * 6364136223846793005ull + 1;
  auto b = c.read();
  EXPECT_GT(b.instructions - a.instructions, 1000000u);  // at least one instruction an iteration
  EXPECT_GT(b.cycles - a.cycles, 100000u);
}

// --profile-ops: a HostMeter that profiles counts the ops of its calls only, once a call each,
// nested ones apart, and leaves nothing behind once stopped.
TEST(HostMeter, ProfilesTheOpsInsideItsCallsOnly) {
  pkb::jobs::timing::HostMeter m;
  m.start({}, /*profile_ops=*/true);
  at::Tensor x = at::ones({64});
  for (int i = 0; i < 4; ++i) {
    at::Tensor outside = x.mul(2);  // between calls: not counted
    m.call_started();
    at::Tensor z = at::zeros({64});
    at::Tensor y = x.add(z);
    {
      RECORD_USER_SCOPE("test::scope");
      y.mul_(3);
    }
    m.call_returned();
  }
  pkb::eval::HostUse h = m.stop();
  auto find = [&](const std::string& name, bool nested) -> const pkb::eval::OpHost* {
    for (auto& o : h.ops)
      if (o.name == name && o.nested == nested) return &o;
    return nullptr;
  };
  for (const char* op : {"aten::zeros", "aten::add", "test::scope"}) {
    const pkb::eval::OpHost* o = find(op, false);
    ASSERT_NE(o, nullptr) << op;
    EXPECT_DOUBLE_EQ(o->calls, 1.0) << op;  // once in each of the 4 calls
    EXPECT_GT(o->us, 0.0) << op;
  }
  ASSERT_NE(find("aten::mul_", true), nullptr);  // inside the scope
  EXPECT_EQ(find("aten::mul_", false), nullptr);
  EXPECT_EQ(find("aten::mul", false), nullptr);  // only between the calls
  EXPECT_GE(h.ops.front().us, h.ops.back().us);  // the longest first

  // Stopped: the callback is gone, and a meter that does not profile gives no ops.
  m.start({});
  m.call_started();
  at::zeros({8});
  m.call_returned();
  EXPECT_TRUE(m.stop().ops.empty());
}
