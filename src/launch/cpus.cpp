#include "launch/cpus.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include <sched.h>

namespace pkb::launch {

namespace {

volatile uint64_t sink;

// Microseconds for a fixed arithmetic loop on the calling thread: the fastest of five.
double loop_us() {
  double best = 1e30;
  for (int k = 0; k < 5; ++k) {
    auto t = std::chrono::steady_clock::now();
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 20000; ++i) x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    sink = x;
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
  }
  return best;
}

// The core a CPU belongs to (its hyperthreads share it), or the CPU itself where unknown.
std::string core_of(int cpu) {
  std::ifstream f("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list");
  std::string s;
  return std::getline(f, s) ? s : std::to_string(cpu);
}

}  // namespace

std::vector<int> timing_cpus(int n) {
  cpu_set_t all;
  if (n <= 0 || sched_getaffinity(0, sizeof all, &all) != 0) return {};
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all)) cpus.push_back(c);
  if (static_cast<int>(cpus.size()) < n + 1) return {};
  std::vector<std::pair<double, int>> speed;
  for (int c : cpus) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) continue;
    speed.push_back({loop_us(), c});
  }
  sched_setaffinity(0, sizeof all, &all);
  std::sort(speed.begin(), speed.end());
  // One CPU a core first, then the rest in the same order.
  std::vector<int> first, then;
  std::set<std::string> cores;
  for (auto& [us, c] : speed) (cores.insert(core_of(c)).second ? first : then).push_back(c);
  first.insert(first.end(), then.begin(), then.end());
  if (static_cast<int>(first.size()) < n) return {};
  first.resize(n);
  return first;
}

PinnedThread::PinnedThread(int cpu) {
  if (cpu < 0 || sched_getaffinity(0, sizeof saved_, &saved_) != 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pinned_ = sched_setaffinity(0, sizeof one, &one) == 0;
}

PinnedThread::~PinnedThread() {
  if (pinned_) sched_setaffinity(0, sizeof saved_, &saved_);
}

}  // namespace pkb::launch
