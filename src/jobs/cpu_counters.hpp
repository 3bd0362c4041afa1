// The calling thread's CPU cycles and instructions in user space, read around a piece of
// work (perf_event_open). Where the kernel or the machine (a VM without a virtual PMU, a
// perf_event_paranoid that forbids it) does not count them, ok() is false and nothing is read.
// Cycles over the thread's CPU time give the core's clock while it ran; instructions tell
// more code from the same code run slower (a colder core, a busy sibling thread).
#pragma once

#include <cstdint>

namespace pkb::jobs::timing {

class CpuCounters {
 public:
  struct Reading {
    uint64_t cycles = 0, instructions = 0;
  };
  CpuCounters();  // counting from now on, for the thread that makes it
  ~CpuCounters();
  CpuCounters(const CpuCounters&) = delete;
  CpuCounters& operator=(const CpuCounters&) = delete;
  bool ok() const { return leader_ >= 0; }
  Reading read() const;  // zeros where !ok()

 private:
  int leader_ = -1, instructions_ = -1;
};

}  // namespace pkb::jobs::timing
