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
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <pwd.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

// Landlock's later rights and scopes, for headers older than the kernel (the values are ABI).
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC (1UL << 0)
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "the seccomp filter reads the low word of each argument, which is first on little-endian machines only"
#endif

namespace pkb::rank {

namespace fs = std::filesystem;

namespace {

// ---- what a rank may read ---------------------------------------------------------------

// The system's software: programs, libraries, headers, their data; and from /sys what
// describes the machine (processors, NUMA nodes, PCI devices and their links, NICs and RDMA
// devices, drivers' parameters, cgroup limits, huge pages), not debugfs, tracing,
// securityfs or firmware variables.
const char* const kSystemFolders[] = {"/usr",        "/lib",        "/lib64",      "/lib32",       "/libx32",
                                      "/bin",        "/sbin",       "/opt",        "/nix/store",   "/sys/devices",
                                      "/sys/bus",    "/sys/class",  "/sys/module", "/sys/dev",     "/sys/fs/cgroup",
                                      "/sys/kernel/mm", "/sys/kernel/iommu_groups"};

// What libraries read from /etc, by name: the dynamic loader (also of the compiler Triton
// runs), locale and time zone, user and host lookups (public files: password hashes are in
// /etc/shadow), NCCL's configuration, the system's name for platform checks, OpenSSL's
// configuration and public certificates, the RDMA and NVIDIA drivers' configuration, and
// the interpreter's own folder (Debian's python3.X). Not /etc/shadow, sudoers, SSH host
// keys, /etc/ssl/private or anything else there.
const char* const kEtcFiles[] = {
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ld.so.preload", "localtime", "timezone", "locale.alias",
    "locale.conf", "default/locale", "nsswitch.conf", "passwd", "group", "host.conf", "hosts", "hostname",
    "resolv.conf", "gai.conf", "services", "protocols", "nccl.conf", "os-release", "lsb-release", "debian_version",
    "redhat-release", "system-release", "mime.types", "ssl/openssl.cnf", "ssl/certs", "pki/tls/openssl.cnf",
    "pki/tls/certs", "crypto-policies", "nvidia", "libibverbs.d", "rdma", "selinux/config", "alternatives"};

// What libraries read from /proc besides their own process: the machine (processors,
// memory, load, kernel settings under /proc/sys), the NVIDIA driver's state, PCI and
// device numbers. Not another process's /proc/<pid> (environ, cmdline), /proc/keys,
// /proc/sysvipc or /proc/locks.
const char* const kProcFiles[] = {"cpuinfo", "meminfo", "stat", "loadavg", "uptime",   "version", "filesystems",
                                  "devices", "sys",     "driver", "bus/pci", "cgroups", "swaps",   "vmstat",
                                  "zoneinfo", "modules", "crypto"};

// Device files a rank opens, by name: the C library's (null, zero, random), CUDA's
// (nvidiactl, nvidia0..., nvidia-uvm, nvidia-caps/ for MIG, nvidia-caps-imex-channels/ for
// fabric handles), GDRCopy's and RDMA's (NCCL's network). Not /dev/shm, /dev/tty, /dev/pts.
const char* const kDevices[] = {"null", "zero", "full", "random", "urandom", "gdrdrv", "infiniband"};

void add_if_exists(std::vector<std::string>& out, const std::string& p) {
  std::error_code ec;
  if (!p.empty() && fs::exists(p, ec)) out.push_back(p);
}

fs::path canonical_or_same(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : c;
}

// Places no read rule may cover: Landlock grants everything beneath a folder, so a rule for
// the user's home (a library loaded from it, a Python path) would open ~/.ssh with it.
std::vector<fs::path> hidden_places() {
  std::vector<fs::path> out;
  if (passwd* pw = getpwuid(getuid()); pw && pw->pw_dir && *pw->pw_dir) out.push_back(canonical_or_same(pw->pw_dir));
  for (const char* p : {"/tmp", "/var/tmp", "/dev/shm", "/etc/shadow", "/proc/1", "/run", "/root"})
    out.push_back(canonical_or_same(p));
  return out;
}

bool covers(const fs::path& folder, const fs::path& place) {
  std::string f = folder.string(), p = place.string();
  if (f == "/" || f == p) return true;
  return p.size() > f.size() && p.compare(0, f.size(), f) == 0 && p[f.size()] == '/';
}

// ---- Landlock -------------------------------------------------------------------------

// The ruleset attribute of Landlock ABI 6 (later fields zero are accepted by every kernel).
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;
  uint64_t scoped = 0;
};

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
  if (abi >= 2) r |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;  // truncate(2) of a file it may not write
  return r;  // ioctls on devices (CUDA's) stay allowed: not handled
}

constexpr uint64_t kReadRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
// Truncation included: open(O_TRUNC) of a /proc/self file ("w" in Python) asks for it.
constexpr uint64_t kReadWriteRights = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                      LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_TRUNCATE;

// Rights that make sense on a file (not a folder).
uint64_t file_rights(int abi) {
  uint64_t r = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;
  if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;
  return r;
}

// procfs makes a new inode each time it looks a name up, and a Landlock rule is tied to the
// inode: a rule on /proc/<pid> or /proc/cpuinfo would go if the kernel dropped that entry
// from its cache. An open descriptor keeps the entry, so these stay open for the rank's life.
std::vector<int> g_pinned;

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
  if (path.rfind("/proc/", 0) == 0) g_pinned.push_back(fd);
  else close(fd);
  return rc == 0;
#else
  return false;
#endif
}

// Landlock confines the thread that restricts itself and the threads it starts later, not
// those running already (gloo's, NCCL's proxy and RAS threads, CUDA's, OpenMP's). Each of
// those restricts itself to the same ruleset in a handler of a signal sent to it alone, as
// glibc changes every thread's ids. A thread that blocks the signal stays outside, and is
// counted.
std::atomic<int> g_ruleset{-1}, g_threads_confined{0}, g_threads_refused{0};

extern "C" void on_confine(int) {
  int saved = errno;
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
#if defined(SYS_landlock_restrict_self)
  if (syscall(SYS_landlock_restrict_self, g_ruleset.load(), 0) == 0) ++g_threads_confined;
  else ++g_threads_refused;
#endif
  errno = saved;
}

// Every other thread of the rank restricted to `ruleset`; returns how many were sent the
// signal (the others have exited meanwhile). Waits up to a second for their answers.
int confine_running_threads(int ruleset) {
  const int sig = SIGRTMIN + 7;  // glibc keeps the first few for itself
  struct sigaction sa{};
  sa.sa_handler = on_confine;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
  g_ruleset = ruleset;
  pid_t self = static_cast<pid_t>(syscall(SYS_gettid)), pid = getpid();
  int sent = 0;
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/proc/self/task", ec)) {
    pid_t tid = static_cast<pid_t>(std::atol(e.path().filename().c_str()));
    if (tid != self && syscall(SYS_tgkill, pid, tid, sig) == 0) ++sent;
  }
  for (int waited = 0; g_threads_confined + g_threads_refused < sent && waited < 1000; ++waited) usleep(1000);
  return sent;
}

bool restrict_filesystem(const SandboxPaths& paths, int abi, bool& scoped, std::string& why, int& threads_left) {
#if defined(SYS_landlock_create_ruleset) && defined(SYS_landlock_restrict_self)
  RulesetAttr attr;
  uint64_t handled = attr.handled_access_fs = handled_rights(abi);
  // Signals and abstract Unix sockets only within the sandbox (the rank and what it starts).
  if (abi >= 6) attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
  int rs = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (rs < 0) {
    why = std::string("landlock_create_ruleset: ") + std::strerror(errno);
    return false;
  }
  // With processes allowed, execution is granted by name only (paths.exec).
  uint64_t no_exec = paths.processes ? ~uint64_t(LANDLOCK_ACCESS_FS_EXECUTE) : ~uint64_t(0);
  for (auto& p : paths.read) add_rule(rs, p, kReadRights & handled & no_exec, abi);
  for (auto& p : paths.write) add_rule(rs, p, handled & no_exec, abi);
  for (auto& p : paths.read_write) add_rule(rs, p, kReadWriteRights & handled, abi);
  if (paths.processes)
    for (auto& p : paths.exec) add_rule(rs, p, kReadRights & handled, abi);
  // The threads already running first, then this one (whose scopes would then keep it
  // from signalling them).
  if (paths.every_thread) {
    int sent = confine_running_threads(rs);
    threads_left = sent - g_threads_confined.load();
  }
  bool ok = syscall(SYS_landlock_restrict_self, rs, 0) == 0;
  if (!ok) why = std::string("landlock_restrict_self: ") + std::strerror(errno);
  scoped = ok && attr.scoped != 0;
  g_ruleset = -1;  // a thread that unblocks the signal later restricts itself to nothing
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

constexpr uint32_t kTrap = SECCOMP_RET_TRAP, kAllow = SECCOMP_RET_ALLOW, kRefuse = SECCOMP_RET_ERRNO | EPERM;

// Calls denied outright and recorded, with what they would have reached.
struct Denied {
  long nr;
  const char* what;
};
const Denied kDenied[] = {
    {SYS_tkill, "tkill: a signal by thread id, which may be another process's"},
    {SYS_ptrace, "ptrace: another process's memory and registers"},
    {SYS_process_vm_readv, "process_vm_readv: another process's memory"},
    {SYS_process_vm_writev, "process_vm_writev: another process's memory"},
#ifdef SYS_pidfd_getfd
    {SYS_pidfd_getfd, "pidfd_getfd: another process's files"},
#endif
    {SYS_kcmp, "kcmp: another process's files and memory"},
    {SYS_keyctl, "keyctl: the user's kernel keyrings, which outlive the rank"},
    {SYS_add_key, "add_key: the user's kernel keyrings, which outlive the rank"},
    {SYS_request_key, "request_key: the user's kernel keyrings, which outlive the rank"},
    {SYS_open_by_handle_at, "open_by_handle_at: files by handle, past the path rules"},
    {SYS_bpf, "bpf: programs in the kernel"},
    {SYS_init_module, "init_module: loading kernel code"},
    {SYS_finit_module, "finit_module: loading kernel code"},
    {SYS_delete_module, "delete_module: unloading kernel code"},
    {SYS_kexec_load, "kexec_load: replacing the kernel"},
#ifdef SYS_kexec_file_load
    {SYS_kexec_file_load, "kexec_file_load: replacing the kernel"},
#endif
#ifdef SYS_io_uring_setup
    {SYS_io_uring_setup, "io_uring_setup: asynchronous system calls"},
#endif
    {SYS_shmget, "shmget: System V shared memory, which outlives the rank"},
    {SYS_shmat, "shmat: System V shared memory, which outlives the rank"},
    {SYS_shmctl, "shmctl: System V shared memory, which outlives the rank"},
    {SYS_msgget, "msgget: a System V message queue, which outlives the rank"},
    {SYS_msgsnd, "msgsnd: a System V message queue, which outlives the rank"},
    {SYS_msgrcv, "msgrcv: a System V message queue, which outlives the rank"},
    {SYS_msgctl, "msgctl: a System V message queue, which outlives the rank"},
    {SYS_semget, "semget: System V semaphores, which outlive the rank"},
    {SYS_semop, "semop: System V semaphores, which outlive the rank"},
    {SYS_semtimedop, "semtimedop: System V semaphores, which outlive the rank"},
    {SYS_semctl, "semctl: System V semaphores, which outlive the rank"},
    {SYS_mq_open, "mq_open: a POSIX message queue, which outlives the rank"},
    {SYS_mq_unlink, "mq_unlink: a POSIX message queue, which outlives the rank"},
    {SYS_mq_timedsend, "mq_timedsend: a POSIX message queue, which outlives the rank"},
    {SYS_mq_timedreceive, "mq_timedreceive: a POSIX message queue, which outlives the rank"},
    {SYS_mq_notify, "mq_notify: a POSIX message queue, which outlives the rank"},
    {SYS_mq_getsetattr, "mq_getsetattr: a POSIX message queue, which outlives the rank"},
};

// Calls that change a file's metadata, which Landlock does not cover: mode, owner, extended
// attributes and times of any file the user owns would outlive the rank (a place to store
// data for a later candidate). Refused quietly (EPERM), since the linker sets its output's
// mode and goes on when it cannot.
const long kMetadata[] = {
#ifdef SYS_chmod
    SYS_chmod,
#endif
#ifdef SYS_chown
    SYS_chown,
#endif
#ifdef SYS_lchown
    SYS_lchown,
#endif
#ifdef SYS_utime
    SYS_utime,
#endif
#ifdef SYS_utimes
    SYS_utimes,
#endif
#ifdef SYS_futimesat
    SYS_futimesat,
#endif
    SYS_fchmod,     SYS_fchmodat,    SYS_fchown,       SYS_fchownat,     SYS_setxattr, SYS_lsetxattr, SYS_fsetxattr,
    SYS_removexattr, SYS_lremovexattr, SYS_fremovexattr, SYS_utimensat,
    452,  // fchmodat2
    463,  // setxattrat
    466,  // removexattrat
};

// Calls that act on a process named by its id, allowed on the rank itself only. A thread of
// the rank is named by its own id, which the filter cannot tell from another process's, so
// these are refused quietly (EPERM) rather than recorded.
const long kSchedulingOfSelf[] = {SYS_sched_setaffinity, SYS_sched_setscheduler, SYS_sched_setparam,
#ifdef SYS_sched_setattr
                                  SYS_sched_setattr,
#endif
                                  SYS_prlimit64, SYS_migrate_pages, SYS_move_pages};

// What the trap handler saw; read by take_violation on the rank's main thread.
char g_violation[256];
std::atomic<bool> g_violated{false};

// Threads that ran before the sandbox (NCCL's proxy and RAS threads, gloo's, CUDA's): the
// filter holds for them too, but what they are refused is their libraries' doing, not the
// candidate's, so it is said on stderr rather than recorded for the verdict.
pid_t g_earlier[1024];
std::atomic<int> g_earlier_count{0};
std::atomic<int> g_earlier_said{0};

void note_earlier_threads() {
  pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  int n = 0;
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/proc/self/task", ec)) {
    pid_t tid = static_cast<pid_t>(std::atol(e.path().filename().c_str()));
    if (tid != self && n < int(sizeof g_earlier / sizeof g_earlier[0])) g_earlier[n++] = tid;
  }
  g_earlier_count = n;
}

bool on_earlier_thread() {
  pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  for (int i = 0, n = g_earlier_count.load(); i < n; ++i)
    if (g_earlier[i] == tid) return true;
  return false;
}

// Async-signal-safe text building, for the handler.
struct Text {
  char buf[sizeof g_violation];
  size_t n = 0;
  Text& operator<<(const char* s) {
    while (*s && n + 1 < sizeof buf) buf[n++] = *s++;
    buf[n] = 0;
    return *this;
  }
  Text& operator<<(long v) {
    char digits[24];
    int k = 0;
    bool negative = v < 0;
    unsigned long u = negative ? 0ul - static_cast<unsigned long>(v) : static_cast<unsigned long>(v);
    do digits[k++] = static_cast<char>('0' + u % 10); while ((u /= 10) && k < 23);
    if (negative) digits[k++] = '-';
    while (k && n + 1 < sizeof buf) buf[n++] = digits[--k];
    buf[n] = 0;
    return *this;
  }
};

void note(const Text& t) {
  if (g_violated.exchange(true)) return;  // the first one tells the story
  std::memcpy(g_violation, t.buf, t.n + 1);
}

void describe(Text& t, int nr, const long* arg) {
  for (const Denied& d : kDenied)
    if (nr == d.nr) {
      t << d.what;
      return;
    }
  if (nr == SYS_socket) {
    if (arg[0] == AF_INET || arg[0] == AF_INET6) t << "socket(AF_INET/AF_INET6): a network connection";
    else if (arg[0] == AF_UNIX) t << "socket(AF_UNIX): a Unix-domain socket, a way to other processes";
    else t << "socket(family " << arg[0] << "): a socket";
  } else if (nr == SYS_execve || nr == SYS_execveat) {
    t << "execve: running another program";
  } else if (nr == SYS_kill || nr == SYS_tgkill || nr == SYS_rt_sigqueueinfo || nr == SYS_rt_tgsigqueueinfo) {
    t << (nr == SYS_kill ? "kill" : nr == SYS_tgkill ? "tgkill" : nr == SYS_rt_sigqueueinfo ? "rt_sigqueueinfo" : "rt_tgsigqueueinfo")
      << "(pid " << static_cast<long>(static_cast<int>(arg[0])) << "): a signal to another process";
#ifdef SYS_pidfd_open
  } else if (nr == SYS_pidfd_open) {
    t << "pidfd_open(pid " << static_cast<long>(static_cast<int>(arg[0])) << "): a handle on another process";
#endif
  } else if (nr == SYS_fcntl) {
    t << "fcntl(F_SETOWN): signals to another process";
  } else if (nr == SYS_ioctl) {
    t << (static_cast<unsigned>(arg[1]) == TIOCSTI ? "ioctl(TIOCSTI): typing into a terminal"
                                                   : "ioctl(FIOSETOWN/SIOCSPGRP): signals to another process");
  } else if (nr == SYS_clone && (arg[0] & CLONE_PARENT)) {
    t << "clone(CLONE_PARENT): a process outside the rank";
  } else {
    t << "fork/clone: starting a process";
  }
}

extern "C" void on_sigsys(int, siginfo_t* info, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  long arg[3];
#if defined(__x86_64__)
  arg[0] = uc->uc_mcontext.gregs[REG_RDI];
  arg[1] = uc->uc_mcontext.gregs[REG_RSI];
  arg[2] = uc->uc_mcontext.gregs[REG_RDX];
#elif defined(__aarch64__)
  for (int i = 0; i < 3; ++i) arg[i] = static_cast<long>(uc->uc_mcontext.regs[i]);
#endif
  Text t;
  describe(t, info->si_syscall, arg);
  if (!on_earlier_thread()) {
    note(t);
  } else if (g_earlier_said++ < 4) {
    Text line;
    line << "pkb: the sandbox refused " << t.buf << " on thread " << static_cast<long>(syscall(SYS_gettid))
         << ", started before the sandbox by pkb or a library\n";
    ssize_t ignored = write(2, line.buf, line.n);
    (void)ignored;
  }
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
  uc->uc_mcontext.regs[0] = static_cast<uint64_t>(-EPERM);
#endif
}

// A classic BPF program built block by block: each block starts with "is this call nr?" and
// ends every path inside it in a return, so the accumulator holds nr again after a miss.
class Filter {
 public:
  std::vector<sock_filter> code;

  void op(sock_filter f) { code.push_back(f); }
  void on(long nr, uint32_t action) { on(nr, {ret(action)}); }
  void on(long nr, const std::vector<sock_filter>& body) {
    op(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, static_cast<uint8_t>(body.size())));
    code.insert(code.end(), body.begin(), body.end());
  }

  static sock_filter ret(uint32_t action) { return BPF_STMT(BPF_RET | BPF_K, action); }
  // The low word of argument i: all a pid, a flag word's low flags or an ioctl number need.
  static sock_filter arg(int i) {
    return BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * i));
  }
  // `pass` when every listed argument holds one of its values, else `fail`.
  static std::vector<sock_filter> when_all(const std::vector<std::pair<int, std::vector<uint32_t>>>& conds,
                                           uint32_t pass, uint32_t fail) {
    size_t total = 2;
    for (auto& c : conds) total += 2 + c.second.size();
    std::vector<sock_filter> b;
    for (auto& [i, values] : conds) {
      size_t start = b.size(), next = start + 2 + values.size();
      b.push_back(arg(i));
      for (uint32_t v : values) b.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, v, uint8_t(next - b.size() - 1), 0));
      b.push_back(BPF_STMT(BPF_JMP | BPF_JA, uint32_t(total - 1 - b.size() - 1)));
    }
    b.push_back(ret(pass));
    b.push_back(ret(fail));
    return b;
  }
};

std::vector<sock_filter> build_filter(bool processes, int abi) {
  const uint32_t self = static_cast<uint32_t>(getpid());
  // Processes and programs: denied, or left to Landlock's list of programs.
  const uint32_t process = processes ? kAllow : kTrap;
  Filter f;
  f.op(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  f.op(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0));
  f.op(Filter::ret(SECCOMP_RET_KILL_PROCESS));
  f.op(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
  // x32 system calls are other numbers for the same calls: none.
  f.op(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1));
  f.op(Filter::ret(kRefuse));
#endif
  // ioctl first: CUDA calls it often, and it is the one frequent call whose arguments are
  // looked at (calls decided by number alone are cached by the kernel). Setting a file's
  // owner sends SIGIO/SIGURG to that process; TIOCSTI types into a terminal.
  f.on(SYS_ioctl, Filter::when_all({{1, {FIOSETOWN, SIOCSPGRP, TIOCSTI}}}, kTrap, kAllow));
  f.on(SYS_fcntl, Filter::when_all({{1, {F_SETOWN, F_SETOWN_EX}}}, kTrap, kAllow));
  // Sockets: netlink routing queries (reading the interfaces) only; no network, no Unix
  // socket (socketpair stays: a connected pair reaches no one else).
  f.on(SYS_socket, Filter::when_all({{0, {AF_NETLINK}}, {2, {NETLINK_ROUTE}}}, kAllow, kTrap));
  // Signals and process handles: the rank itself only (its threads through tgkill).
  for (long nr : {long(SYS_kill), long(SYS_tgkill), long(SYS_rt_sigqueueinfo), long(SYS_rt_tgsigqueueinfo)})
    f.on(nr, Filter::when_all({{0, {self}}}, kAllow, kTrap));
#ifdef SYS_pidfd_open
  f.on(SYS_pidfd_open, Filter::when_all({{0, {self}}}, kAllow, kTrap));
#endif
  f.on(SYS_setpriority, Filter::when_all({{0, {PRIO_PROCESS}}, {1, {0, self}}}, kAllow, kRefuse));
  f.on(SYS_ioprio_set, Filter::when_all({{0, {1 /* IOPRIO_WHO_PROCESS */}}, {1, {0, self}}}, kAllow, kRefuse));
  for (long nr : kSchedulingOfSelf) f.on(nr, Filter::when_all({{0, {0, self}}}, kAllow, kRefuse));
  for (const Denied& d : kDenied) f.on(d.nr, kTrap);
  for (long nr : kMetadata) f.on(nr, kRefuse);
  // Before Landlock ABI 3, truncate(2) by path is outside Landlock's write rules.
  if (abi < 3) f.on(SYS_truncate, kRefuse);
#if defined(__x86_64__)
  f.on(SYS_fork, process);
  f.on(SYS_vfork, process);
#endif
  f.on(SYS_execve, process);
  f.on(SYS_execveat, process);
  // clone3 hides its flags behind a pointer: ENOSYS makes libc fall back to clone.
#ifdef SYS_clone3
  f.on(SYS_clone3, SECCOMP_RET_ERRNO | ENOSYS);
#endif
  // clone: threads (CLONE_THREAD) yes; processes as above, never as the parent's sibling
  // (CLONE_PARENT: its exit signal would go to pkb).
  if (processes)
    f.on(SYS_clone, {Filter::arg(0), BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 2, 0),
                     BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_PARENT, 0, 1), Filter::ret(kTrap), Filter::ret(kAllow)});
  else
    f.on(SYS_clone, {Filter::arg(0), BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0), Filter::ret(kTrap),
                     Filter::ret(kAllow)});
  f.op(Filter::ret(kAllow));
  return f.code;
}

bool filter_syscalls(bool processes, bool every_thread, int abi, std::string& why) {
#if defined(__x86_64__) || defined(__aarch64__)
  struct sigaction sa{};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSYS, &sa, nullptr);
  note_earlier_threads();
  std::vector<sock_filter> prog = build_filter(processes, abi);
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
  // Every thread of the rank: one gloo or CUDA started before is no way around it.
  long rc = every_thread ? syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog) : -1;
  if (rc == 0) return true;
  if (!every_thread) {
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0) return true;
    why = std::string("seccomp: ") + std::strerror(errno);
    return false;
  }
  if (rc > 0) why = "seccomp: thread " + std::to_string(rc) + " could not be filtered, so only this one is";
  else why = std::string("seccomp on every thread: ") + std::strerror(errno);
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
    why = std::string("seccomp: ") + std::strerror(errno);
    return false;
  }
  return true;
#else
  why = "seccomp filter not written for this processor";
  return false;
#endif
}

}  // namespace

nlohmann::json SandboxStatus::to_json() const {
  return {{"landlock_abi", landlock_abi}, {"filesystem", filesystem}, {"scoped", scoped}, {"seccomp", seccomp},
          {"threads_confined", threads_confined}, {"threads_unconfined", threads_unconfined}, {"note", note}};
}

SandboxStatus sandbox_support() {
  SandboxStatus s;
  s.landlock_abi = landlock_version();
  s.filesystem = s.landlock_abi > 0;
  s.scoped = s.landlock_abi >= 6;
#if defined(__x86_64__) || defined(__aarch64__)
  s.seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
#endif
  if (!s.filesystem) s.note = "no Landlock in this kernel: candidates can read and write what the user can";
  else if (!s.scoped) s.note = "Landlock ABI < 6: signals and abstract sockets are held by seccomp alone";
  return s;
}

SandboxPaths rank_paths(const std::vector<std::string>& read, const std::vector<std::string>& write) {
  SandboxPaths p;
  const std::vector<fs::path> hidden = hidden_places();
  auto add_read = [&](const std::string& path) {
    if (path.empty()) return;
    fs::path c = canonical_or_same(path);
    for (auto& h : hidden)
      if (covers(c, h)) return;
    add_if_exists(p.read, path);
  };
  for (const char* d : kSystemFolders) add_read(d);
  for (const char* f : kEtcFiles) add_if_exists(p.read, std::string("/etc/") + f);
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/etc", ec))  // the interpreter's own (Debian: python3, python3.12)
    if (e.path().filename().string().rfind("python3", 0) == 0) add_if_exists(p.read, e.path().string());
  for (const char* f : kProcFiles) add_if_exists(p.read, std::string("/proc/") + f);
  // Its own /proc/<pid>: maps, status, fd, thread names (/proc/self/task/*/comm, written).
  add_if_exists(p.read_write, "/proc/" + std::to_string(getpid()));
  // Every library mapped now, its folder, and the site-packages a Python package's
  // library lives in (torch finds the CUDA libraries it loads later beside itself). Only
  // files: memfd and /dev/shm mappings show as paths too.
  std::set<std::string> dirs;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    size_t slash = line.find('/');
    if (slash == std::string::npos || line.find(" (deleted)") != std::string::npos) continue;
    fs::path lib = line.substr(slash);
    if (!fs::is_regular_file(lib, ec)) continue;
    dirs.insert(lib.parent_path().string());
    std::string s = lib.string();
    if (size_t sp = s.find("/site-packages/"); sp != std::string::npos) dirs.insert(s.substr(0, sp + 14));
  }
  for (auto& d : dirs) add_read(d);
  for (auto& r : read) add_read(r);
  for (const char* d : kDevices) add_if_exists(p.read_write, std::string("/dev/") + d);
  for (auto& e : fs::directory_iterator("/dev", ec))  // nvidiactl, nvidia0..., nvidia-uvm, nvidia-caps/...
    if (e.path().filename().string().rfind("nvidia", 0) == 0) add_if_exists(p.read_write, e.path().string());
  // The MPS daemon's pipes (its clients talk through them), never a new file there.
  if (const char* d = std::getenv("CUDA_MPS_PIPE_DIRECTORY")) add_if_exists(p.read_write, d);
  // The evaluation's scratch folder (HOME and TMPDIR; launch/environment.cpp).
  if (const char* d = std::getenv("PKB_SCRATCH")) add_if_exists(p.write, d);
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
  // Both layers need it when the rank lacks CAP_SYS_ADMIN, and it keeps setuid programs
  // from gaining anything.
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  int left = 0;
  if (s.landlock_abi > 0) s.filesystem = restrict_filesystem(paths, s.landlock_abi, s.scoped, why_fs, left);
  else why_fs = "no Landlock in this kernel";
  s.threads_confined = g_threads_confined.load();
  s.threads_unconfined = left;
  s.seccomp = filter_syscalls(paths.processes, paths.every_thread, s.landlock_abi, why_sc);
  if (!s.filesystem) s.note = why_fs + ": the candidate can read and write what the user can";
  if (left > 0)
    s.note += (s.note.empty() ? "" : "; ") + std::to_string(left) +
              " thread(s) started before the sandbox block signals and kept the rank's file rights (Landlock)";
  if (!why_sc.empty())
    s.note += (s.note.empty() ? "" : "; ") + why_sc +
              (s.seccomp ? "" : ": the candidate can open sockets, signal other processes and start processes");
  return s;
}

std::string take_violation() {
  if (!g_violated.load()) return "";
  std::string v = g_violation;
  g_violated = false;
  return v;
}

}  // namespace pkb::rank
