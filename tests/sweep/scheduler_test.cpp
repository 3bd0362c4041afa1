// Packing evaluations onto a node (sweep/scheduler.hpp) on made-up nodes: 8 GPUs, 2, an
// uneven set of free ones, the CPU device. A small event simulation runs each queue to its
// end and checks, at every start, that no GPU holds two evaluations and that no more run
// than allowed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "sweep/scheduler.hpp"

using namespace pkb::sweep;

namespace {

struct Job {
  int world = 1;
  double seconds = 1;
};

struct Started {
  size_t id;
  double at, until;
  std::vector<int> gpus;
};

// Runs `jobs` (in `order`) on a Packer to the end, time advancing to each next end.
// Fails the test on any overlap of GPUs or slots; returns when each job ran.
std::vector<Started> simulate(const std::vector<Job>& jobs, std::vector<int> gpus, int most_at_once,
                              std::vector<Waiting> order = {}) {
  if (order.empty())
    for (size_t i = 0; i < jobs.size(); ++i) order.push_back({i, jobs[i].world});
  Packer packer(gpus, most_at_once);
  std::vector<Started> log;
  std::map<size_t, Started> running;
  double now = 0;
  while (!order.empty() || !running.empty()) {
    for (const Assignment& a : packer.assign(order)) {
      order.erase(std::find_if(order.begin(), order.end(), [&](const Waiting& w) { return w.id == a.id; }));
      const Job& j = jobs[a.id];
      if (!gpus.empty()) EXPECT_EQ(a.gpus.size(), std::min<size_t>(j.world, gpus.size())) << "job " << a.id;
      for (auto& [id, r] : running)
        for (int g : a.gpus)
          EXPECT_EQ(std::count(r.gpus.begin(), r.gpus.end(), g), 0) << "GPU " << g << " given to " << a.id
                                                                     << " while " << id << " holds it";
      running[a.id] = {a.id, now, now + j.seconds, a.gpus};
      EXPECT_LE(running.size(), static_cast<size_t>(most_at_once));
    }
    if (running.empty()) {
      ADD_FAILURE() << "nothing runs and nothing starts: " << order.size() << " waiting forever";
      break;
    }
    auto next = std::min_element(running.begin(), running.end(),
                                 [](auto& a, auto& b) { return a.second.until < b.second.until; });
    Started done = next->second;
    running.erase(next);
    now = done.until;
    log.push_back(done);
    packer.finished(done.id);
  }
  std::sort(log.begin(), log.end(), [](auto& a, auto& b) { return a.id < b.id; });
  return log;
}

double makespan(const std::vector<Started>& log) {
  double end = 0;
  for (auto& s : log) end = std::max(end, s.until);
  return end;
}

std::vector<int> gpus(int n) {
  std::vector<int> g;
  for (int i = 0; i < n; ++i) g.push_back(i);
  return g;
}

}  // namespace

// Eight GPUs: a W=1 evaluation on each, side by side, each on its own GPU.
TEST(Packer, EightGpusTakeEightSingleGpuEvaluationsAtOnce) {
  std::vector<Job> jobs(8);
  auto log = simulate(jobs, gpus(8), 8);
  std::set<int> used;
  for (auto& s : log) {
    EXPECT_EQ(s.at, 0) << "job " << s.id << " waited with GPUs free";
    ASSERT_EQ(s.gpus.size(), 1u);
    used.insert(s.gpus[0]);
  }
  EXPECT_EQ(used.size(), 8u);
  EXPECT_EQ(makespan(log), 1);
}

// Mixed W on eight GPUs, largest first: W=8 alone, then two W=4, then four W=2, then W=1s;
// the W=4 pair takes disjoint halves.
TEST(Packer, EightGpusLargestFirstOnDisjointSets) {
  std::vector<Job> jobs = {{1}, {2}, {4}, {8}, {4}, {2}, {2}, {2}, {1}, {1}};
  std::vector<Waiting> order;
  for (size_t i = 0; i < jobs.size(); ++i) order.push_back({i, jobs[i].world});
  order = largest_first(order);
  std::vector<size_t> ids;
  for (auto& w : order) ids.push_back(w.id);
  EXPECT_EQ(ids, (std::vector<size_t>{3, 2, 4, 1, 5, 6, 7, 0, 8, 9})) << "by W, the grid's order among equals";
  auto log = simulate(jobs, gpus(8), 8, order);
  EXPECT_EQ(log[3].at, 0);
  EXPECT_EQ(log[3].gpus, gpus(8));
  EXPECT_EQ(log[2].at, 1);
  EXPECT_EQ(log[4].at, 1);
  std::vector<int> halves = log[2].gpus;
  halves.insert(halves.end(), log[4].gpus.begin(), log[4].gpus.end());
  std::sort(halves.begin(), halves.end());
  EXPECT_EQ(halves, gpus(8)) << "the two W=4 evaluations split the node";
  for (size_t id : {1, 5, 6, 7}) EXPECT_EQ(log[id].at, 2) << "the four W=2 evaluations run together";
  for (size_t id : {0, 8, 9}) EXPECT_EQ(log[id].at, 3) << "then the W=1 ones";
  EXPECT_EQ(makespan(log), 4);
}

// A W=4 evaluation waiting for GPUs is not passed by W=1 ones refilling them.
TEST(Packer, ALargerEvaluationIsNotStarvedBySmallerOnes) {
  // Four GPUs; a long W=1 holds one. The W=4 behind it waits, and so do the W=1s after it.
  std::vector<Job> jobs = {{1, 10}, {4, 1}, {1, 1}, {1, 1}};
  auto log = simulate(jobs, gpus(4), 4);
  EXPECT_EQ(log[1].at, 10) << "the W=4 one starts once the node is free";
  EXPECT_GE(log[2].at, 10) << "nothing smaller jumped ahead of it";
  EXPECT_GE(log[3].at, 10);
}

// Two GPUs: W=2 evaluations one at a time, W=1 two at a time; a W larger than the node
// takes every GPU (its ranks share them, as pkb eval does alone).
TEST(Packer, TwoGpus) {
  std::vector<Job> jobs = {{2}, {2}, {1}, {1}, {4}};
  auto log = simulate(jobs, gpus(2), 2);
  EXPECT_EQ(log[0].at, 0);
  EXPECT_EQ(log[1].at, 1);
  EXPECT_EQ(log[2].at, 2);
  EXPECT_EQ(log[3].at, 2);
  EXPECT_NE(log[2].gpus, log[3].gpus);
  EXPECT_EQ(log[4].gpus, gpus(2));
  EXPECT_EQ(log[4].at, 3);
}

// Only some GPUs free (others busy with other work): evaluations go on those, lowest first.
TEST(Packer, UnevenFreeGpus) {
  Packer p({1, 2, 5, 6, 7}, 8);
  auto a = p.assign({{0, 2}, {1, 2}, {2, 2}, {3, 1}});
  ASSERT_EQ(a.size(), 2u) << "two W=2 fit in five GPUs; the third W=2 does not and stops the walk";
  EXPECT_EQ(a[0].gpus, (std::vector<int>{1, 2}));
  EXPECT_EQ(a[1].gpus, (std::vector<int>{5, 6}));
  EXPECT_EQ(p.free_gpus(), (std::vector<int>{7}));
  p.finished(0);
  a = p.assign({{2, 2}, {3, 1}});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].gpus, (std::vector<int>{1, 2}));
  EXPECT_EQ(a[1].gpus, (std::vector<int>{7}));
  EXPECT_TRUE(p.free_gpus().empty());
  EXPECT_THROW(p.finished(9), std::logic_error);
}

// One GPU: one evaluation at a time, whatever --parallel says.
TEST(Packer, OneGpuRunsOneAtATime) {
  std::vector<Job> jobs = {{1}, {1}, {2}};
  auto log = simulate(jobs, gpus(1), 4);
  EXPECT_EQ(log[0].at, 0);
  EXPECT_EQ(log[1].at, 1);
  EXPECT_EQ(log[2].at, 2);
}

// The CPU device: slots, not GPUs; N at once whatever their W.
TEST(Packer, CpuDeviceRunsNAtOnce) {
  std::vector<Job> jobs = {{4}, {4}, {2}, {2}, {2}};
  auto log = simulate(jobs, {}, 2);
  EXPECT_EQ(log[0].at, 0);
  EXPECT_EQ(log[1].at, 0);
  EXPECT_EQ(log[2].at, 1);
  EXPECT_EQ(log[3].at, 1);
  EXPECT_EQ(log[4].at, 2);
  for (auto& s : log) EXPECT_TRUE(s.gpus.empty());
}

TEST(Packer, LargestFirstKeepsTheGridOrderAmongEquals) {
  auto order = largest_first({{0, 1}, {1, 4}, {2, 1}, {3, 4}, {4, 2}});
  std::vector<size_t> ids;
  for (auto& w : order) ids.push_back(w.id);
  EXPECT_EQ(ids, (std::vector<size_t>{1, 3, 4, 0, 2}));
}

TEST(EvaluationsAtOnce, CountsAutoAndBadInput) {
  EXPECT_EQ(evaluations_at_once("1", 8, 64, 8), 1);
  EXPECT_EQ(evaluations_at_once("3", 0, 2, 2), 3);
  EXPECT_EQ(evaluations_at_once("auto", 8, 128, 1), 8) << "one per GPU";
  EXPECT_EQ(evaluations_at_once("auto", 0, 16, 4), 4) << "the CPU device: cores over the largest W";
  EXPECT_EQ(evaluations_at_once("auto", 0, 2, 4), 1);
  for (const char* bad : {"0", "-2", "two", "2x", ""}) {
    try {
      evaluations_at_once(bad, 8, 8, 1);
      ADD_FAILURE() << "accepted --parallel '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--parallel takes a number of evaluations at once (1 or more) or auto"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(VisibleGpuNames, FromTheParentsCudaVisibleDevices) {
  EXPECT_EQ(visible_gpu_names(nullptr, 3), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(visible_gpu_names("", 2), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(visible_gpu_names("4,5, 7", 3), (std::vector<std::string>{"4", "5", "7"}));
  EXPECT_EQ(visible_gpu_names("GPU-8f1c,GPU-22aa", 2), (std::vector<std::string>{"GPU-8f1c", "GPU-22aa"}));
  EXPECT_EQ(visible_gpu_names("4", 2), (std::vector<std::string>{"0", "1"})) << "fewer entries than GPUs: by index";
  EXPECT_TRUE(visible_gpu_names("4,5", 0).empty());
}
