// Another process of the group held still: SIGSTOP now, SIGCONT when the object goes,
// whatever happens in between. A judge holds its candidate rank so while it times the
// reference in its own process (jobs/eval_judge.cpp): no thread of the candidate's runs on
// the host then, so nothing of it slows what the machine's pace is measured on.
#pragma once

#include <sys/types.h>

namespace pkb::launch {

class Stopped {
 public:
  // Waits (up to a second) until the process is seen stopped; `ok()` false where it could
  // not be stopped or seen so (no such process, or the system refused).
  explicit Stopped(pid_t pid);
  ~Stopped();
  Stopped(const Stopped&) = delete;
  Stopped& operator=(const Stopped&) = delete;
  bool ok() const { return ok_; }

 private:
  pid_t pid_ = 0;
  bool ok_ = false;
};

// The state letter of /proc/<pid>/stat ('R', 'S', 'T', ...), or 0 where it cannot be read.
char process_state(pid_t pid);

}  // namespace pkb::launch
