// --profile-ops: where a timing thread's host time goes inside its timed calls, op by op.
// Every ATen op (and every communicator call, comm/comms.hpp's make_scoped_comm) the thread
// makes while a call is being timed is timed on the host, start to end, by a RecordFunction
// callback of this thread alone. The judges' reference and the candidate rank's calls are
// profiled alike, so that where the same code takes longer on one side (@reference), the
// op that does is named. The callbacks add host time to every op, on both sides alike: a
// profiled timing is never cached nor counted (flag `profiled`).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "eval/reports.hpp"

namespace pkb::jobs {

class OpProfile {
 public:
  OpProfile();   // the callback, on this thread
  ~OpProfile();  // removed
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  // Whether the thread is inside a timed call now: only those ops count.
  void inside(bool yes);
  // Each op's count and host time per call over `calls` timed calls, the longest first.
  std::vector<eval::OpHost> per_call(size_t calls) const;

  struct Total {
    double us = 0;
    long count = 0;
  };

 private:
  uint64_t handle_ = 0;  // at::CallbackHandle: record_function.h stays out of timing.hpp's includers
  bool inside_ = false;
  int depth_ = 0;  // ops started and not yet ended, inside calls
  std::map<std::pair<std::string, bool>, Total> totals_;  // (name, nested)
  friend struct OpProfileCallbacks;
};

}  // namespace pkb::jobs
