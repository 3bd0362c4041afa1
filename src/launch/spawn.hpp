// Starting the ranks, and ending whatever they leave behind.
//
// A rank is a fork+exec of pkb itself in the group's process group (so the group can be
// killed as one) that dies with the parent (PR_SET_PDEATHSIG), with resource limits, an
// environment built for it (environment.hpp) and two channels to the parent: the
// bootstrap socket and a pipe of its stdout and stderr. Its stdin is /dev/null, and no
// other descriptor of the parent's reaches it.
#pragma once

#include <string>
#include <sys/socket.h>
#include <sys/types.h>
#include <vector>

namespace pkb::launch {

struct Limits {
  bool apply = true;
  unsigned long long file_bytes = 64ull << 30;  // the largest file a rank may write
  // RLIMIT_NPROC: processes (and threads) of the user beyond those it runs when the group
  // starts (run_group counts them once). Root ignores it: the sandbox's seccomp filter is
  // what stops a fork bomb there.
  unsigned long long processes = 4096;
};

// Tasks (threads of processes) of this real user now (from /proc).
unsigned long long user_processes();

struct Spawned {
  pid_t pid = -1;
  int sock = -1;  // the parent's end of the bootstrap channel
  int out = -1;   // the rank's stdout and stderr
};

// `pgid` 0 makes the rank lead a new process group. `env` holds "KEY=VALUE" entries; the
// bootstrap descriptor's number is added as PKB_BOOTSTRAP_FD. `nproc` is the absolute
// RLIMIT_NPROC (0: none). `sock_type`: the bootstrap socket's (SOCK_STREAM for a rank;
// the fork server's messages carry descriptors, SOCK_SEQPACKET).
Spawned spawn_rank(const std::vector<std::string>& argv, std::vector<std::string> env, pid_t pgid,
                   const Limits& limits, unsigned long long nproc, int sock_type = SOCK_STREAM);

// In a new process before it becomes a rank: every descriptor but 0, 1, 2 and `keep`
// closed (whatever its parent inherited without close-on-exec: none may reach a candidate).
void close_inherited(int keep);

// Processes the ranks leave behind, daemons that called setsid() among them: made at
// start, it turns this process into a child subreaper (so every orphan below it comes
// back to it) and notes the children it has; end() kills every child that came since and
// was reparented here, again and again until none is left or `grace_s` passes. Returns
// how many it ended.
class Leftovers {
 public:
  Leftovers();
  int end(const std::vector<pid_t>& ranks, double grace_s = 5.0);

 private:
  std::vector<pid_t> before_;
};

// Children of this process now (from /proc).
std::vector<pid_t> children_of_self();

}  // namespace pkb::launch
