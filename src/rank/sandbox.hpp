// The sandbox a rank enters before it loads a candidate (model-written code): whatever the
// candidate does afterwards, on this thread or threads it starts, it
//   - reads only what a rank needs (system folders, the libraries and folders the rank has
//     mapped, the candidate, the CUDA devices) and writes only its scratch folder, pkb's
//     outputs, /dev and /dev/shm (Landlock, where the kernel has it);
//   - opens no network socket and starts no process (seccomp: socket(AF_INET/AF_INET6),
//     fork, vfork, clone without CLONE_THREAD, execve and io_uring are denied; sockets that
//     NCCL and gloo opened before stay usable);
//   - except for candidates whose runtime must run programs (Triton runs ptxas and a C
//     compiler): those may start processes, but Landlock lets them execute only the listed
//     programs (SandboxPaths::exec), and every process they start inherits both layers;
// and what it tried is recorded for the verdict (take_violation) rather than crashing the
// rank. Environment, process limits and leftover children are the parent's part
// (launch/environment.hpp, launch/spawn.hpp). Threads that existed before (NCCL's, gloo's)
// are not confined: the candidate gets no handle on them through the ABI.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pkb::rank {

struct SandboxPaths {
  std::vector<std::string> read;   // and execute (unless `processes`)
  std::vector<std::string> write;  // and create, remove (and execute unless `processes`)
  // Processes may be started, running only the programs (files or folders) in `exec` and
  // the dynamic loader; read and write paths then lose the right to execute.
  bool processes = false;
  std::vector<std::string> exec;
};

struct SandboxStatus {
  int landlock_abi = 0;     // 0: the kernel has no Landlock
  bool filesystem = false;  // Landlock rules in force
  bool seccomp = false;     // the system-call filter in force
  std::string note;         // what is missing, for the user
  nlohmann::json to_json() const;
};

// What this kernel offers (pkb doctor), without entering anything.
SandboxStatus sandbox_support();

// The paths a rank needs: system folders, every library it has mapped (and, for Python
// packages, their site-packages), /dev, its scratch folder ($TMPDIR), the MPS pipes, plus
// `read` and `write`.
SandboxPaths rank_paths(const std::vector<std::string>& read, const std::vector<std::string>& write);

// Lets the candidate start processes that run only `programs` (files or folders) and the
// dynamic loader; `p`'s read and write paths lose the right to execute.
void allow_programs(SandboxPaths& p, const std::vector<std::string>& programs);

// Confines the calling thread (and threads it starts from now on). Never fails: a layer
// the kernel lacks is skipped and named in the status's note.
SandboxStatus enter_sandbox(const SandboxPaths& paths);

// What the sandbox denied since the last call, e.g. "socket(AF_INET): a network
// connection", or "" when nothing.
std::string take_violation();

}  // namespace pkb::rank
