// The sandbox a rank enters before it loads a candidate (model-written code): whatever the
// candidate does afterwards, on this thread or threads and processes it starts, it
//   - reads only what a rank needs: the system's software folders, the files of /etc and
//     /proc that libraries read (by name: no /etc/shadow, no other process's /proc/<pid>),
//     the libraries and folders the rank has mapped, the candidate, the devices;
//   - writes only the evaluation's scratch folder (HOME and TMPDIR, removed afterwards),
//     pkb's named outputs and the device files CUDA writes (Landlock, where the kernel has
//     it): nothing it writes outlives the evaluation or reaches another candidate;
//   - opens no network or Unix-domain socket, signals no process but its own, reads or
//     writes no other process's memory, keeps nothing in System V IPC, message queues or
//     kernel keyrings, and starts no process (seccomp, on every thread of the rank; Landlock
//     scopes where the kernel has them);
//   - except for candidates whose runtime must run programs (Triton runs ptxas and a C
//     compiler): those may start processes, but Landlock lets them execute only the listed
//     programs (SandboxPaths::exec), and every process they start inherits both layers;
// and what it tried is recorded for the verdict (take_violation) rather than crashing the
// rank. Environment, process limits, inherited descriptors and leftover children are the
// parent's part (launch/environment.hpp, launch/spawn.hpp). Threads that existed before
// (NCCL's, gloo's, CUDA's) are filtered by seccomp too (what they are refused is said on
// stderr, not recorded: it is their library's doing) but keep the rank's filesystem rights:
// the candidate gets no handle on them through the ABI.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pkb::rank {

struct SandboxPaths {
  std::vector<std::string> read;   // and execute (unless `processes`)
  std::vector<std::string> write;  // and create, remove (and execute unless `processes`)
  // Existing files (or everything beneath a folder) that may be opened for reading and
  // writing, never created, removed or executed: device nodes, the rank's own /proc/<pid>,
  // the MPS daemon's pipes.
  std::vector<std::string> read_write;
  // Processes may be started, running only the programs (files or folders) in `exec` and
  // the dynamic loader; read and write paths then lose the right to execute.
  bool processes = false;
  std::vector<std::string> exec;
  // Both layers on every thread of the rank, those started before too (seccomp's TSYNC;
  // Landlock by each thread restricting itself), or only on the calling thread and those it
  // starts (pkb's own tests of the layers).
  bool every_thread = true;
};

struct SandboxStatus {
  int landlock_abi = 0;     // 0: the kernel has no Landlock
  bool filesystem = false;  // Landlock rules in force
  bool scoped = false;      // Landlock's signal and abstract-socket scopes in force (ABI >= 6)
  bool seccomp = false;     // the system-call filter in force
  // Threads that ran before the sandbox (pkb's libraries': gloo, NCCL, CUDA, OpenMP), each
  // restricted to the same Landlock rules, and those that could not be (signals blocked).
  int threads_confined = 0, threads_unconfined = 0;
  std::string note;         // what is missing, for the user
  nlohmann::json to_json() const;
};

// What this kernel offers (pkb doctor), without entering anything.
SandboxStatus sandbox_support();

// The paths a rank needs: the system's software folders (/usr, /lib*, /bin, /sbin, /opt),
// what /sys says about the machine, the files of /etc and /proc that libraries read, its own /proc/<pid>, every library
// it has mapped (and, for Python packages, their site-packages), the device files CUDA, NCCL
// and the C library open, the scratch folder ($PKB_SCRATCH), the MPS pipes, plus `read` and
// `write`. A read path that would cover a hidden place (the user's home, /tmp, /dev/shm,
// /etc, /proc, or the root) is left out.
SandboxPaths rank_paths(const std::vector<std::string>& read, const std::vector<std::string>& write);

// Lets the candidate start processes that run only `programs` (files or folders) and the
// dynamic loader; `p`'s read and write paths lose the right to execute.
void allow_programs(SandboxPaths& p, const std::vector<std::string>& programs);

// Confines the calling thread, the threads it starts from now on and every process they
// start (Landlock), and every thread of the process (seccomp). Never fails: a layer the
// kernel lacks is skipped and named in the status's note.
SandboxStatus enter_sandbox(const SandboxPaths& paths);

// What the sandbox denied the candidate (the thread that entered it and threads started
// since) since the last call, e.g. "socket(AF_INET/AF_INET6): a network connection", or ""
// when nothing.
std::string take_violation();

}  // namespace pkb::rank
