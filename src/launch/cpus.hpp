// CPUs for the ranks' timing threads. A call whose launches outlast the head start its host
// gets is timed on its host, so where the host runs matters: on a shared machine (a VM's
// vCPUs over busy cores) one CPU ran a fixed loop 1.8x slower than another, and a judge
// whose thread landed on a slow one timed a disturbed reference (bench/results
// h200-2026-12-03, calls 12-16). Each rank's timing thread is held on a CPU of its own,
// picked from the fastest while pkb starts the run.
#pragma once

#include <vector>

#include <sched.h>

namespace pkb::launch {

// Up to `n` CPUs of this process's affinity set, the fastest first (a fixed arithmetic
// loop timed on each), two hyperthreads of one core only where there are not enough cores.
// Empty where the set has fewer than n + 1 CPUs: the timing threads would then crowd out
// everything else (the CPU device on a small machine), and are left where the OS puts them.
std::vector<int> timing_cpus(int n);

// Holds the calling thread on `cpu` (-1: anywhere) until destroyed, then restores its
// affinity. Threads it starts meanwhile inherit the CPU: hold it around timed loops only.
class PinnedThread {
 public:
  explicit PinnedThread(int cpu);
  ~PinnedThread();
  PinnedThread(const PinnedThread&) = delete;
  PinnedThread& operator=(const PinnedThread&) = delete;

 private:
  bool pinned_ = false;
  cpu_set_t saved_;
};

}  // namespace pkb::launch
