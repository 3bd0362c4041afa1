// Ranks forked from one process that has pkb and libtorch loaded already, rather than each
// exec'ing pkb afresh: an exec pays the dynamic loader and libtorch's static initialisers
// (~0.6 CPU-s a process), most of what a CPU-device evaluation costs at W = 4 (eight
// processes on two cores), and a share of every GPU evaluation's start.
//
// The server is started as a rank is (spawn_rank: exec'd, with the ranks' environment and
// limits, its own process group, dying with the parent), so nothing of the parent's memory
// reaches a rank through it. It stays single-threaded and touches no device; for each
// request it forks a child that makes itself what spawn_rank's child would be (the rank's
// process group, death signal, standard streams, bootstrap socket, environment) and goes
// on into the worker. It tells the parent of each child's exit, and keeps the child a
// zombie until the group ends, so a kill() from the parent never reaches a reused pid.
#pragma once

#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

#include "launch/spawn.hpp"

namespace pkb::launch {

class ForkServer {
 public:
  // Starts `argv` (pkb's `__fork_server`) with `env` (the ranks' environment without
  // PKB_RANK) and waits up to `ready_s` until it is ready. ok() is false where it did not
  // come up (it found itself multi-threaded, failed to start, or took longer): the caller
  // then execs each rank, and why_not() says why.
  ForkServer(const std::vector<std::string>& argv, std::vector<std::string> env, const Limits& limits,
             unsigned long long nproc, double ready_s);
  // Closes the channel: the server kills what is left of its children, reaps them and
  // exits, and is reaped here.
  ~ForkServer();
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  bool ok() const { return ok_; }
  const std::string& why_not() const { return why_not_; }

  // A rank with `env` ("KEY=VALUE"; PKB_BOOTSTRAP_FD is added), in process group `pgid`
  // (0: it leads a new one). Throws std::runtime_error where the server cannot fork.
  Spawned spawn(const std::vector<std::string>& env, pid_t pgid);

  int fd() const { return ctl_; }  // readable when the server reported an exit (or went)
  // The exits reported since the last call: pid and wait status (as waitpid gives it).
  // Waits up to `timeout_s` for the first one when none is pending.
  std::vector<std::pair<pid_t, int>> exits(double timeout_s = 0);
  // The server itself has gone (its channel closed): its children died with it.
  bool gone() const { return gone_; }

 private:
  bool read_messages(double timeout_s);
  pid_t pid_ = -1;
  int ctl_ = -1, out_ = -1;
  bool ok_ = false, gone_ = false;
  std::string why_not_;
  std::vector<std::pair<pid_t, int>> pending_;
  pid_t spawned_ = 0;  // the last spawn's answer: a pid, or -errno
  bool answered_ = false;
};

// What a server that holds more than pkb (an embedded interpreter) must do around each
// fork: in the server before it and after it, and in the child once it is the rank (with
// the rank's environment, `envp`, in place). Any may be null.
struct ForkHooks {
  void (*before)() = nullptr;
  void (*parent)() = nullptr;
  void (*child)(char** envp) = nullptr;
};

// The server's side, `pkb __fork_server`: serves requests on the channel named by
// PKB_BOOTSTRAP_FD. Returns only in a forked child, set up as a rank; the server itself
// exits when the parent closes the channel.
void serve_forks(const ForkHooks& hooks = {});

}  // namespace pkb::launch
