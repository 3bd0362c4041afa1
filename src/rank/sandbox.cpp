#include "rank/sandbox.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

namespace pkb::rank {

namespace fs = std::filesystem;

namespace {

// ---- Landlock -------------------------------------------------------------------------

int landlock_version() {
#ifdef SYS_landlock_create_ruleset
  long v = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v < 0 ? 0 : static_cast<int>(v);
#else
  return 0;
#endif
}

uint64_t handled_rights(int abi) {
  uint64_t r = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
               LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
               LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
               LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
               LANDLOCK_ACCESS_FS_MAKE_SYM;
#ifdef LANDLOCK_ACCESS_FS_REFER
  if (abi >= 2) r |= LANDLOCK_ACCESS_FS_REFER;
#endif
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
  if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
  return r;  // ioctls on devices (CUDA's) stay allowed: not handled
}

constexpr uint64_t kReadRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
// Rights that make sense on a file (not a folder).
uint64_t file_rights(int abi) {
  uint64_t r = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
  if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
  return r;
}

bool add_rule(int ruleset, const std::string& path, uint64_t rights, int abi) {
#ifdef SYS_landlock_add_rule
  int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) rights &= file_rights(abi);
  landlock_path_beneath_attr pb{};
  pb.allowed_access = rights;
  pb.parent_fd = fd;
  long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
  close(fd);
  return rc == 0;
#else
  return false;
#endif
}

bool restrict_filesystem(const SandboxPaths& paths, int abi, std::string& why) {
#if defined(SYS_landlock_create_ruleset) && defined(SYS_landlock_restrict_self)
  uint64_t handled = handled_rights(abi);
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = handled;
  int rs = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (rs < 0) {
    why = std::string("landlock_create_ruleset: ") + std::strerror(errno);
    return false;
  }
  // With processes allowed, execution is granted by name only (paths.exec).
  uint64_t no_exec = paths.processes ? ~uint64_t(LANDLOCK_ACCESS_FS_EXECUTE) : ~uint64_t(0);
  for (auto& p : paths.read) add_rule(rs, p, kReadRights & handled & no_exec, abi);
  for (auto& p : paths.write) add_rule(rs, p, handled & no_exec, abi);
  if (paths.processes)
    for (auto& p : paths.exec) add_rule(rs, p, kReadRights & handled, abi);
  bool ok = syscall(SYS_landlock_restrict_self, rs, 0) == 0;
  if (!ok) why = std::string("landlock_restrict_self: ") + std::strerror(errno);
  close(rs);
  return ok;
#else
  why = "pkb was built without Landlock headers";
  return false;
#endif
}

// ---- seccomp --------------------------------------------------------------------------

#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#endif

// What the trap handler saw; read by take_violation on the rank's main thread.
char g_violation[256];
std::atomic<bool> g_violated{false};

// Async-signal-safe formatting of the denied call into g_violation.
void note(const char* what) {
  if (g_violated.exchange(true)) return;  // the first one tells the story
  size_t n = std::min(std::strlen(what), sizeof g_violation - 1);
  std::memcpy(g_violation, what, n);
  g_violation[n] = 0;
}

extern "C" void on_sigsys(int, siginfo_t* info, void* context) {
  int nr = info->si_syscall;
  if (nr == SYS_socket) note("socket(AF_INET/AF_INET6): a network connection");
  else if (nr == SYS_execve || nr == SYS_execveat) note("execve: running another program");
#ifdef SYS_io_uring_setup
  else if (nr == SYS_io_uring_setup) note("io_uring_setup: asynchronous system calls");
#endif
  else note("fork/clone: starting a process");
  auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
  uc->uc_mcontext.regs[0] = static_cast<uint64_t>(-EPERM);
#endif
}

#define PKB_LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, field))
#define PKB_ON(nr, action) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, (action))

bool filter_syscalls(bool processes, std::string& why) {
#if defined(__x86_64__) || defined(__aarch64__)
  struct sigaction sa{};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSYS, &sa, nullptr);
  constexpr uint32_t kTrap = SECCOMP_RET_TRAP, kAllow = SECCOMP_RET_ALLOW;
  // Processes and programs: denied, or left to Landlock's list of programs.
  const uint32_t kProcess = processes ? kAllow : kTrap;
  sock_filter prog[] = {
      PKB_LOAD(arch),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      PKB_LOAD(nr),
#if defined(__x86_64__)
      // x32 system calls are other numbers for the same calls: none.
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      PKB_ON(SYS_fork, kProcess),
      PKB_ON(SYS_vfork, kProcess),
#endif
      PKB_ON(SYS_execve, kProcess),
      PKB_ON(SYS_execveat, kProcess),
#ifdef SYS_io_uring_setup
      PKB_ON(SYS_io_uring_setup, kTrap),
#endif
      // clone3 hides its flags behind a pointer: ENOSYS makes libc fall back to clone.
#ifdef SYS_clone3
      PKB_ON(SYS_clone3, SECCOMP_RET_ERRNO | ENOSYS),
#endif
      // clone: threads (CLONE_THREAD) yes, processes no.
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, kAllow),
      BPF_STMT(BPF_RET | BPF_K, kProcess),
      // socket: Unix, netlink and the like yes; IPv4 and IPv6 no.
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 4),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, kTrap),
      BPF_STMT(BPF_RET | BPF_K, kAllow),
  };
  sock_fprog fprog{static_cast<unsigned short>(sizeof prog / sizeof prog[0]), prog};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) {
    why = std::string("seccomp: ") + std::strerror(errno);
    return false;
  }
  return true;
#else
  why = "seccomp filter not written for this processor";
  return false;
#endif
}

void add_if_exists(std::vector<std::string>& out, const std::string& p) {
  std::error_code ec;
  if (!p.empty() && fs::exists(p, ec)) out.push_back(p);
}

}  // namespace

nlohmann::json SandboxStatus::to_json() const {
  return {{"landlock_abi", landlock_abi}, {"filesystem", filesystem}, {"seccomp", seccomp}, {"note", note}};
}

SandboxStatus sandbox_support() {
  SandboxStatus s;
  s.landlock_abi = landlock_version();
  s.filesystem = s.landlock_abi > 0;
#if defined(__x86_64__) || defined(__aarch64__)
  s.seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
#endif
  if (!s.filesystem) s.note = "no Landlock in this kernel: candidates can read and write what the user can";
  return s;
}

SandboxPaths rank_paths(const std::vector<std::string>& read, const std::vector<std::string>& write) {
  SandboxPaths p;
  for (const char* d : {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/run"})
    add_if_exists(p.read, d);
  // Every library mapped now, its folder, and the site-packages a Python package's
  // library lives in (torch finds the CUDA libraries it loads later beside itself).
  std::set<std::string> dirs;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    fs::path lib = line.substr(slash);
    dirs.insert(lib.parent_path().string());
    std::string s = lib.string();
    if (size_t sp = s.find("/site-packages/"); sp != std::string::npos) dirs.insert(s.substr(0, sp + 14));
  }
  for (auto& d : dirs) add_if_exists(p.read, d);
  for (auto& r : read) add_if_exists(p.read, r);
  for (const char* d : {"/dev", "/dev/shm"}) add_if_exists(p.write, d);
  add_if_exists(p.write, "/proc/" + std::to_string(getpid()));  // thread names (/proc/self/task/*/comm)
  for (const char* v : {"TMPDIR", "CUDA_MPS_PIPE_DIRECTORY"})
    if (const char* d = std::getenv(v)) add_if_exists(p.write, d);
  for (auto& w : write) add_if_exists(p.write, w);
  return p;
}

void allow_programs(SandboxPaths& p, const std::vector<std::string>& programs) {
  p.processes = true;
  for (auto& x : programs) add_if_exists(p.exec, x);
  // The dynamic loader of every program (mapped here as ours): the kernel opens it for
  // execution too.
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    size_t slash = line.find('/');
    if (slash != std::string::npos && fs::path(line.substr(slash)).filename().string().rfind("ld-linux", 0) == 0)
      add_if_exists(p.exec, line.substr(slash));
  }
}

SandboxStatus enter_sandbox(const SandboxPaths& paths) {
  SandboxStatus s;
  s.landlock_abi = landlock_version();
  std::string why_fs, why_sc;
  if (s.landlock_abi > 0) s.filesystem = restrict_filesystem(paths, s.landlock_abi, why_fs);
  else why_fs = "no Landlock in this kernel";
  s.seccomp = filter_syscalls(paths.processes, why_sc);
  if (!s.filesystem) s.note = why_fs + ": the candidate can read and write what the user can";
  if (!s.seccomp) s.note += (s.note.empty() ? "" : "; ") + why_sc + ": the candidate can open sockets and start processes";
  return s;
}

std::string take_violation() {
  if (!g_violated.load()) return "";
  std::string v = g_violation;
  g_violated = false;
  return v;
}

}  // namespace pkb::rank
