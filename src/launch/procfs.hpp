// Reading /proc: a file's text, and a stat line's fields. Shared by the process-table scans
// (launch/spawn.hpp) and the hold on a process (launch/stopped.hpp).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

namespace pkb::launch {

// A /proc file's text, "" when its process is gone. (Reading the file of a process reaped
// after the open fails with ESRCH, and libstdc++'s filebuf throws on a failed read.)
std::string proc_file(const std::string& path);

// A stat file's fields past the process's name, which may hold spaces and parentheses:
// "S ppid ..." (state first), "" when the process is gone.
std::string stat_fields(const std::string& stat_path);

// A thread's time on a CPU and time runnable but waiting for one, in ns, as the scheduler
// counts them (/proc/<pid>/task/<tid>/schedstat): what a process did, read from outside it.
struct ThreadTimes {
  int64_t run_ns = 0, wait_ns = 0;
};

// Every thread of process `pid`, by thread id; empty when the process is gone.
std::map<pid_t, ThreadTimes> thread_times(pid_t pid);

}  // namespace pkb::launch
