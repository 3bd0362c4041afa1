// Reading /proc: a file's text, and a stat line's fields. Shared by the process-table scans
// (launch/spawn.hpp) and the hold on a process (launch/stopped.hpp).
#pragma once

#include <string>

namespace pkb::launch {

// A /proc file's text, "" when its process is gone. (Reading the file of a process reaped
// after the open fails with ESRCH, and libstdc++'s filebuf throws on a failed read.)
std::string proc_file(const std::string& path);

// A stat file's fields past the process's name, which may hold spaces and parentheses:
// "S ppid ..." (state first), "" when the process is gone.
std::string stat_fields(const std::string& stat_path);

}  // namespace pkb::launch
