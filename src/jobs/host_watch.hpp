// The candidate rank's threads watched from outside its process, through each side's
// blocks of timed calls (eval::HostShare): a thread of the candidate's that runs while the
// reference's calls do takes the rank's timing CPU from them (every thread of a rank runs
// there), which the judges must know of (eval/interleave.hpp: Beside). Read from the
// kernel's per-thread counts (launch::thread_times), which nothing in the process can
// rewrite.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <set>

#include "eval/interleave.hpp"
#include "eval/reports.hpp"
#include "launch/procfs.hpp"

namespace pkb::jobs {

class HostWatch {
 public:
  // `pkb`: the rank's threads before any candidate code ran there (pkb's, torch's, the
  // driver's); every other thread counts as the candidate's. `pid` 0 watches nothing.
  HostWatch(pid_t pid, const std::set<pid_t>& pkb);
  // From now on: what happened since the last sample is nobody's (the rank was held).
  void restart();
  // A block of `side`'s calls ended now.
  void ended(eval::interleave::Side side);
  eval::HostShare reference, candidate;

 private:
  pid_t pid_;
  const std::set<pid_t>& pkb_;
  std::map<pid_t, launch::ThreadTimes> last_;
  std::chrono::steady_clock::time_point t_;
};

}  // namespace pkb::jobs
