// The timed rounds' rules (eval/interleave.hpp) on made-up paces and times: the plan, the
// schedule of sides, the interval over rounds, the stopping rule and the reference's cap.
#include <gtest/gtest.h>

#include <cmath>

#include "eval/interleave.hpp"

using namespace pkb::eval::interleave;

namespace {

// `n` rounds whose ratios (reference median over candidate median) are `ratios`, in turn.
std::vector<Round> rounds_of(const std::vector<double>& ratios, int n) {
  std::vector<Round> out;
  for (int k = 0; k < n; ++k) {
    double r = 100 * ratios[k % ratios.size()];
    out.push_back({{r - 1, r, 1000 * r}, {100, 100, 100}});  // a stray slow call moves no median
  }
  return out;
}

}  // namespace

// `calls` a side where the budget holds them, never under min_calls; blocks small enough
// for several rounds; rounds in pairs; past `calls`, rounds up to max_calls a side.
TEST(Interleave, ThePlanFollowsThePacesAndTheBudget) {
  Settings s;  // block 10, calls 100, min 10, max 300, budget 20 s
  Plan fast = plan(s, 10e-6, 10e-6);
  EXPECT_EQ(fast.block, 10);
  EXPECT_EQ(fast.min_rounds, 10);
  EXPECT_EQ(fast.max_rounds, 30);
  EXPECT_EQ(fast.max_calls(), 600);
  // 0.5 s a pair: 40 pairs fit, in blocks of 8, 5 rounds made 6 (pairs of rounds).
  Plan slow = plan(s, 0.3, 0.2);
  EXPECT_EQ(slow.block, 8);
  EXPECT_EQ(slow.min_rounds, 6);
  EXPECT_EQ(slow.min_rounds % 2, 0);
  // Far over the budget: min_calls a side still, in blocks of 2.
  Plan long_calls = plan(s, 10, 10);
  EXPECT_EQ(long_calls.block, 2);
  EXPECT_EQ(long_calls.min_rounds, 6);
  EXPECT_GE(long_calls.max_rounds, long_calls.min_rounds);
  EXPECT_EQ(long_calls.max_rounds % 2, 0);
}

// Round k runs C R where k is even, R C where odd: a drift falls on both alike, and the last
// call of every pair of rounds is the candidate's.
TEST(Interleave, SidesAlternateInBlocksAndPairsOfRoundsEndOnTheCandidate) {
  Plan p{2, 2, 4};
  std::string order;
  for (int i = 0; i < 8; ++i) order += side_of(p, i) == Side::candidate ? 'C' : 'R';
  EXPECT_EQ(order, "CCRRRRCC");
  EXPECT_FALSE(ends_round(p, 2));
  EXPECT_TRUE(ends_round(p, 3));
  EXPECT_TRUE(ends_round(p, 7));
  EXPECT_EQ(std::string(side_name(Side::reference)), "reference");
}

// The geometric mean of the rounds' ratios (their medians', so one stray call per block
// moves nothing) and a t-interval over the rounds that narrows as they agree.
TEST(Interleave, TheIntervalIsOverTheRoundsRatios) {
  Estimate same = estimate(rounds_of({1.0}, 6));
  EXPECT_DOUBLE_EQ(same.speedup, 1.0);
  EXPECT_DOUBLE_EQ(same.half_width, 0.0);
  Estimate mixed = estimate(rounds_of({0.9, 1.1}, 8));
  EXPECT_NEAR(mixed.speedup, std::sqrt(0.9 * 1.1), 1e-12);
  EXPECT_LT(mixed.lo, 1.0);
  EXPECT_GT(mixed.hi, 1.0);
  // The same spread over more rounds: a narrower interval.
  EXPECT_LT(estimate(rounds_of({0.9, 1.1}, 32)).half_width, mixed.half_width);
  // One round says nothing of the spread.
  Estimate one = estimate(rounds_of({2.0}, 1));
  EXPECT_DOUBLE_EQ(one.speedup, 2.0);
  EXPECT_TRUE(std::isinf(one.half_width));
  EXPECT_TRUE(estimate({}).rounds == 0);
  // t quantiles: the table, and past it the normal's 1.96 from above.
  EXPECT_DOUBLE_EQ(t95(1), 12.706);
  EXPECT_DOUBLE_EQ(t95(9), 2.262);
  EXPECT_NEAR(t95(1000), 1.962, 1e-3);
}

// The rounds go on through min_rounds, then stop once the interval is within the target,
// at max_rounds, or past the budget; never after an odd number of rounds.
TEST(Interleave, TheRoundsStopOnTheIntervalTheRoundsOrTheBudget) {
  Settings s;
  s.target = 0.03;
  s.budget_s = 20;
  Plan p{10, 4, 8};
  EXPECT_EQ(decide(p, s, rounds_of({1.0}, 2), 0), Stop::go_on);     // under min_rounds
  EXPECT_EQ(decide(p, s, rounds_of({1.0}, 4), 0), Stop::interval);  // every round agrees
  EXPECT_EQ(decide(p, s, rounds_of({1.0}, 5), 0), Stop::go_on);     // an odd count
  EXPECT_EQ(decide(p, s, rounds_of({0.8, 1.25}, 4), 1), Stop::go_on);
  EXPECT_EQ(decide(p, s, rounds_of({0.8, 1.25}, 4), 25), Stop::budget);
  EXPECT_EQ(decide(p, s, rounds_of({0.8, 1.25}, 8), 1), Stop::rounds);
  EXPECT_EQ(decide(p, s, rounds_of({0.99, 1.01}, 6), 1), Stop::interval);
  EXPECT_EQ(std::string(stop_name(Stop::budget)), "budget");
}

// The reference beside the candidate is credited at most (1 + drift) times its baseline.
TEST(Interleave, TheReferenceIsCreditedAtMostItsBaselinePlusTheDrift) {
  Cap none = cap(100, 104, 0.05);
  EXPECT_FALSE(none.applied());
  EXPECT_NEAR(none.slower, 0.04, 1e-12);
  Cap faster = cap(100, 90, 0.05);
  EXPECT_FALSE(faster.applied());
  Cap slowed = cap(100, 200, 0.05);
  EXPECT_TRUE(slowed.applied());
  EXPECT_DOUBLE_EQ(slowed.factor, 105.0 / 200);
  EXPECT_DOUBLE_EQ(slowed.slower, 1.0);
  EXPECT_FALSE(cap(0, 200, 0.05).applied());  // no baseline: nothing to hold it to
}
