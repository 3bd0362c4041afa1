#include "jobs/cpu_counters.hpp"

#include <cstring>

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace pkb::jobs::timing {

namespace {

int open_counter(uint64_t config, int group) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_HARDWARE;
  a.config = config;
  a.disabled = group < 0;  // the leader starts the group once both are open
  a.exclude_kernel = 1;    // allowed at perf_event_paranoid 2; the calls' work is user space
  a.exclude_hv = 1;
  a.read_format = PERF_FORMAT_GROUP;
  return static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, group, PERF_FLAG_FD_CLOEXEC));
}

}  // namespace

CpuCounters::CpuCounters() {
  leader_ = open_counter(PERF_COUNT_HW_CPU_CYCLES, -1);
  if (leader_ < 0) return;
  instructions_ = open_counter(PERF_COUNT_HW_INSTRUCTIONS, leader_);
  if (instructions_ < 0 || ioctl(leader_, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) != 0) {
    if (instructions_ >= 0) close(instructions_);
    close(leader_);
    leader_ = instructions_ = -1;
    return;
  }
  // A counter the PMU cannot schedule (a VM without a virtual PMU) reads zero: absent.
  volatile uint64_t x = 0;
  for (int i = 0; i < 1000; ++i) x = x + i;
  Reading r = read();
  if (r.cycles == 0) {
    close(instructions_);
    close(leader_);
    leader_ = instructions_ = -1;
  }
}

CpuCounters::~CpuCounters() {
  if (instructions_ >= 0) close(instructions_);
  if (leader_ >= 0) close(leader_);
}

CpuCounters::Reading CpuCounters::read() const {
  Reading r;
  if (leader_ < 0) return r;
  uint64_t v[3] = {};  // nr, cycles, instructions (PERF_FORMAT_GROUP)
  if (::read(leader_, v, sizeof v) != static_cast<ssize_t>(sizeof v) || v[0] != 2) return r;
  r.cycles = v[1];
  r.instructions = v[2];
  return r;
}

}  // namespace pkb::jobs::timing
