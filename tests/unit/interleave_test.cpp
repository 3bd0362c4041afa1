// The timed rounds' rules (eval/interleave.hpp) on made-up paces and times: the plan, the
// schedule of sides, the interval over rounds, the stopping rule and the reference's cap.
#include <gtest/gtest.h>

#include <limits>

#include <cmath>

#include "eval/interleave.hpp"

using namespace pkb::eval::interleave;

namespace {

// `n` rounds whose ratios (reference median over candidate median) are `ratios`, in turn.
std::vector<Round> rounds_of(const std::vector<double>& ratios, int n) {
  std::vector<Round> out;
  for (int k = 0; k < n; ++k) {
    double r = 100 * ratios[k % ratios.size()];
    out.push_back({{r - 1, r, 1000 * r}, {100, 100, 100}, {}});  // a stray slow call moves no median
  }
  return out;
}

}  // namespace

// `calls` a side where the budget holds them, never under min_calls; blocks small enough
// for several rounds; rounds in pairs; past `calls`, rounds up to max_calls a side.
TEST(Interleave, ThePlanFollowsThePacesAndTheBudget) {
  Settings s;  // block 10, calls 100, min 10, max 1000, budget 20 s
  Plan fast = plan(s, 10e-6, 10e-6);
  EXPECT_EQ(fast.block, 10);
  EXPECT_EQ(fast.min_rounds, 10);
  EXPECT_EQ(fast.max_rounds, 100);
  EXPECT_EQ(fast.max_calls(), 2000);
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

// The Hodges-Lehmann estimate of the rounds' log ratios (their medians', so one stray call
// per block moves nothing) and the signed-rank interval, which narrows as the rounds agree.
TEST(Interleave, TheIntervalIsOverTheRoundsRatios) {
  Estimate same = estimate(rounds_of({1.0}, 6));
  EXPECT_DOUBLE_EQ(same.speedup, 1.0);
  EXPECT_DOUBLE_EQ(same.half_width, 0.0);
  Estimate mixed = estimate(rounds_of({0.9, 1.1}, 8));
  EXPECT_NEAR(mixed.speedup, std::sqrt(0.9 * 1.1), 1e-12);  // the pairwise means' median: the middle
  EXPECT_LT(mixed.lo, 1.0);
  EXPECT_GT(mixed.hi, 1.0);
  // The same spread over more rounds: a narrower interval.
  Estimate more = estimate(rounds_of({0.9, 1.1, 1.0, 0.95, 1.05}, 40));
  EXPECT_LT(more.half_width, estimate(rounds_of({0.9, 1.1, 1.0, 0.95, 1.05}, 10)).half_width);
  EXPECT_NEAR(more.speedup, 1.0, 0.01);
  // A round the host threw off (a burst of slow reference calls) moves the estimate little,
  // where a mean of the ratios would follow it.
  std::vector<Round> rs = rounds_of({0.99, 1.01}, 12);
  rs[3] = {{400, 400, 400}, {100, 100, 100}, {}};
  Estimate robust = estimate(rs);
  EXPECT_NEAR(robust.speedup, 1.0, 0.02);
  EXPECT_LT(robust.hi, 1.1);
  // Under six rounds no 95% interval exists: the estimate, with an infinite half-width.
  Estimate few = estimate(rounds_of({2.0}, 5));
  EXPECT_DOUBLE_EQ(few.speedup, 2.0);
  EXPECT_TRUE(std::isinf(few.half_width));
  EXPECT_TRUE(estimate({}).rounds == 0);
}

// The signed-rank interval's ends: the k-th Walsh average from either end, k from the exact
// distribution (10 values: k = 9, the table's critical value 8 plus one), the normal beyond 200.
TEST(Interleave, TheSignedRankIntervalTakesTheTablesOrderStatistics) {
  std::vector<double> x;
  for (int i = 1; i <= 10; ++i) x.push_back(i);
  Location l = hodges_lehmann(x);
  EXPECT_TRUE(l.ok);
  EXPECT_DOUBLE_EQ(l.estimate, 5.5);
  // Walsh averages of 1..10 in order: 1, 1.5, 2, 2, 2.5, 2.5, 3, 3, 3, (3.5 ...): the 9th is 3.
  EXPECT_DOUBLE_EQ(l.lo, 3.0);
  EXPECT_DOUBLE_EQ(l.hi, 8.0);
  std::vector<double> six = {1, 2, 3, 4, 5, 6};
  Location s6 = hodges_lehmann(six);
  EXPECT_TRUE(s6.ok);  // 1/64 under 2.5%: the extremes
  EXPECT_DOUBLE_EQ(s6.lo, 1.0);
  EXPECT_DOUBLE_EQ(s6.hi, 6.0);
  EXPECT_FALSE(hodges_lehmann({1, 2, 3, 4, 5}).ok);
  // Past 200 values the normal approximation, symmetric about the middle.
  std::vector<double> many;
  for (int i = 0; i < 301; ++i) many.push_back(i);
  Location m = hodges_lehmann(many);
  EXPECT_DOUBLE_EQ(m.estimate, 150.0);
  EXPECT_NEAR(m.estimate - m.lo, m.hi - m.estimate, 1e-9);
  EXPECT_GE(m.lo, 139.0);
  EXPECT_LT(m.lo, 145.0);
}

// The gate's uncertainty widens the interval where it matters: a call near the gate's own
// cost, sped up; the same code on both sides keeps its interval.
TEST(Interleave, TheGatesUncertaintyWidensTheInterval) {
  std::vector<Round> fast;
  for (int k = 0; k < 10; ++k) fast.push_back({{20, 20, 20}, {10, 10, 10}, {}});
  Estimate plain = estimate(fast), wide = estimate(fast, 2.0);
  EXPECT_DOUBLE_EQ(plain.speedup, 2.0);
  EXPECT_DOUBLE_EQ(wide.speedup, 2.0);
  EXPECT_NEAR(wide.lo, 22.0 / 12, 1e-12);
  EXPECT_NEAR(wide.hi, 18.0 / 8, 1e-12);
  Estimate same = estimate(rounds_of({1.0}, 10), 2.0);
  EXPECT_NEAR(same.half_width, 0.0, 1e-12);
}

// The rounds go on through min_rounds, then stop once the interval is within the target,
// at max_rounds, or past the budget; never after an odd number of rounds.
TEST(Interleave, TheRoundsStopOnTheIntervalTheRoundsOrTheBudget) {
  Settings s;
  s.target = 0.03;
  s.budget_s = 20;
  Plan p{10, 6, 10};
  EXPECT_EQ(decide(p, s, rounds_of({1.0}, 4), 0), Stop::go_on);     // under min_rounds
  EXPECT_EQ(decide(p, s, rounds_of({1.0}, 6), 0), Stop::interval);  // every round agrees
  EXPECT_EQ(decide(p, s, rounds_of({1.0}, 7), 0), Stop::go_on);     // an odd count
  EXPECT_EQ(decide(p, s, rounds_of({0.8, 1.25}, 6), 1), Stop::go_on);
  EXPECT_EQ(decide(p, s, rounds_of({0.8, 1.25}, 6), 25), Stop::budget);
  EXPECT_EQ(decide(p, s, rounds_of({0.8, 1.25}, 10), 1), Stop::rounds);
  EXPECT_EQ(decide(p, s, rounds_of({0.99, 1.01}, 8), 1), Stop::interval);
  // The gate's uncertainty counts toward the interval: a 2x speedup on 10 us calls whose
  // gate is uncertain by 2 us never gets within 3%.
  std::vector<Round> fast;
  for (int k = 0; k < 6; ++k) fast.push_back({{20, 20, 20}, {10, 10, 10}, {}});
  EXPECT_EQ(decide(p, s, fast, 1), Stop::interval);
  s.gate_us = 2;
  EXPECT_EQ(decide(p, s, fast, 1), Stop::go_on);
  EXPECT_EQ(std::string(stop_name(Stop::budget)), "budget");
}

// The reference beside the candidate is credited at most (1 + drift) times its baseline,
// times the machine's own slow-down (the judges' reference) up to 1 + machine.
TEST(Interleave, TheReferenceIsCreditedAtMostItsBaselinePlusTheDrift) {
  Cap none = cap({100, 104}, 0.05, 0.25);
  EXPECT_FALSE(none.applied());
  EXPECT_NEAR(none.slower, 0.04, 1e-12);
  EXPECT_FALSE(cap({100, 90}, 0.05, 0.25).applied());
  Cap slowed = cap({100, 200}, 0.05, 0.25);
  EXPECT_TRUE(slowed.applied());
  EXPECT_DOUBLE_EQ(slowed.factor, 105.0 / 200);
  EXPECT_DOUBLE_EQ(slowed.slower, 1.0);
  EXPECT_FALSE(cap({0, 200}, 0.05, 0.25).applied());  // no baseline: nothing to hold it to
  // The machine slowed by 20% (the judges' own reference, 50 -> 60 us): so may the reference.
  Cap machine = cap({100, 124, 50, 60}, 0.05, 0.25);
  EXPECT_FALSE(machine.applied());
  EXPECT_DOUBLE_EQ(machine.machine, 1.2);
  // The judges' reference ran as before: the baseline's bound alone.
  EXPECT_TRUE(cap({100, 124, 50, 50}, 0.05, 0.25).applied());
  // A machine 2x slower is credited 1.25x at most: what slows every process on the GPU
  // gains a candidate no more than that.
  Cap hog = cap({100, 200, 50, 100}, 0.05, 0.25);
  EXPECT_DOUBLE_EQ(hog.machine, 1.25);
  EXPECT_DOUBLE_EQ(hog.factor, 100 * 1.25 * 1.05 / 200);
  // A machine that sped up tightens nothing: the baseline's bound still holds.
  Cap sped = cap({100, 104, 50, 40}, 0.05, 0.25);
  EXPECT_DOUBLE_EQ(sped.machine, 1.0);
  EXPECT_FALSE(sped.applied());
}

// Where nothing of the candidate was seen beside the reference, the rounds' estimate
// stands however the reference drifted from its baseline (a host that slows the process
// 2x for seconds slows both sides); the drift is still said.
TEST(Interleave, NothingOfTheCandidateSeenLeavesTheRoundsEstimate) {
  Cap host = cap({100, 260, 50, 50}, 0.05, 0.25, /*seen=*/false);
  EXPECT_FALSE(host.applied());
  EXPECT_DOUBLE_EQ(host.factor, 1.0);
  EXPECT_DOUBLE_EQ(host.slower, 1.6);
  Cap seen = cap({100, 260, 50, 50}, 0.05, 0.25, /*seen=*/true);
  EXPECT_DOUBLE_EQ(seen.factor, 105.0 / 260);
}

// What counts as the candidate seen beside the reference: its threads on the CPU for more
// than kThreadShare of the reference's blocks, the device probe at the rounds' ends more
// than kProbeSlower over its baseline, or process state it changed; unmeasured probes say
// nothing.
TEST(Interleave, TheCandidateIsSeenBesideTheReferenceByItsThreadsOrTheDeviceProbe) {
  EXPECT_FALSE(beside(0, 40, 40.5).any());
  Beside threads = beside(kThreadShare * 2, 40, 40);
  EXPECT_TRUE(threads.threads);
  EXPECT_FALSE(threads.device);
  EXPECT_FALSE(beside(kThreadShare / 2, 0, 0).any());
  Beside device = beside(0, 40, 40 * (1 + 2 * kProbeSlower));
  EXPECT_TRUE(device.device);
  EXPECT_NEAR(device.probe_slower, 2 * kProbeSlower, 1e-12);
  EXPECT_FALSE(beside(0, 0, 80).any());   // no baseline probe
  EXPECT_FALSE(beside(0, 40, 0).any());   // no probe after the reference
  EXPECT_FALSE(beside(0, 40, 30).any());  // faster is nothing
  Beside state = beside(0, 40, 40, "cuda persisting L2 bytes: 0 -> 31457280");
  EXPECT_TRUE(state.any());
  EXPECT_FALSE(state.threads || state.device);
}
