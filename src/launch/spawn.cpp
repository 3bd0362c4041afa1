#include "launch/spawn.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/procfs.hpp"

namespace pkb::launch {

namespace {

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// `fd` moved above 0, 1 and 2 (where the child's standard streams go), close-on-exec.
int above_stdio(int fd) {
  if (fd > 2) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  if (moved < 0) throw_errno("fcntl");
  return moved;
}

}  // namespace

void close_inherited(int keep) {
#ifdef SYS_close_range
  if ((keep <= 3 || syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), 0u) == 0) &&
      syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u) == 0)
    return;
#endif
  for (int fd = 3; fd < 65536; ++fd)
    if (fd != keep) close(fd);
}

unsigned long long user_processes() {
  unsigned long long n = 0;
  uid_t me = getuid();
  for (auto& d : std::filesystem::directory_iterator("/proc", std::filesystem::directory_options::skip_permission_denied)) {
    std::string name = d.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // RLIMIT_NPROC counts tasks: every thread of every process of the user.
    std::istringstream f(proc_file(d.path() / "status"));
    bool mine = false;
    for (std::string line; std::getline(f, line);) {
      if (line.rfind("Uid:", 0) == 0) mine = std::stoul(line.substr(4)) == me;
      if (line.rfind("Threads:", 0) == 0 && mine) n += std::stoull(line.substr(8));
    }
  }
  return n;
}

namespace {

pid_t parent_of(pid_t pid) {
  std::string fields = stat_fields("/proc/" + std::to_string(pid) + "/stat");  // "S ppid ..."
  return fields.size() < 2 ? -1 : static_cast<pid_t>(std::atol(fields.c_str() + 2));
}

}  // namespace

Spawned spawn_rank(const std::vector<std::string>& argv, std::vector<std::string> env, pid_t pgid,
                   const Limits& limits, unsigned long long nproc_limit, int sock_type) {
  int sv[2], out[2];
  if (socketpair(AF_UNIX, sock_type | SOCK_CLOEXEC, 0, sv) != 0) throw_errno("socketpair");
  if (pipe2(out, O_CLOEXEC) != 0) throw_errno("pipe");
  sv[1] = above_stdio(sv[1]);
  out[1] = above_stdio(out[1]);
  // A rank reads nothing from the user's terminal (nor types into it: TIOCSTI).
  int null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_in < 0) throw_errno("open /dev/null");
  null_in = above_stdio(null_in);
  env.push_back("PKB_BOOTSTRAP_FD=" + std::to_string(sv[1]));
  // Everything the child needs is built before forking: it only sets limits and execs.
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  rlimit core{0, 0}, fsize{limits.file_bytes, limits.file_bytes};
  rlimit nproc{nproc_limit, nproc_limit};

  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    setpgid(0, pgid);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGPIPE}) sigaction(s, &dfl, nullptr);
    if (limits.apply) {
      setrlimit(RLIMIT_CORE, &core);
      setrlimit(RLIMIT_FSIZE, &fsize);
      if (nproc_limit) setrlimit(RLIMIT_NPROC, &nproc);
    }
    dup2(out[1], 1);
    dup2(out[1], 2);
    dup2(null_in, 0);
    close_inherited(sv[1]);
    fcntl(sv[1], F_SETFD, 0);  // keep the bootstrap socket across exec
    execve(args[0], args.data(), envp.data());
    dprintf(2, "pkb: cannot start worker %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pgid ? pgid : pid);
  close(sv[1]);
  close(out[1]);
  close(null_in);
  set_nonblocking(sv[0]);
  set_nonblocking(out[0]);
  return {pid, sv[0], out[0]};
}

std::vector<pid_t> children_of_self() {
  std::vector<pid_t> out;
  pid_t me = getpid();
  for (auto& d : std::filesystem::directory_iterator("/proc", std::filesystem::directory_options::skip_permission_denied)) {
    std::string name = d.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (parent_of(pid) == me) out.push_back(pid);
  }
  return out;
}

Leftovers::Leftovers() {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  before_ = children_of_self();
}

int Leftovers::end(const std::vector<pid_t>& ranks, double grace_s) {
  int ended = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  for (int quiet = 0; quiet < 3 && std::chrono::steady_clock::now() < deadline;) {
    bool any = false;
    for (pid_t pid : children_of_self()) {
      if (std::count(before_.begin(), before_.end(), pid) || std::count(ranks.begin(), ranks.end(), pid)) continue;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      ++ended;
      any = true;
    }
    // An orphan's own children come back here once it is gone: look again, a few times.
    quiet = any ? 0 : quiet + 1;
    if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ended;
}

}  // namespace pkb::launch
