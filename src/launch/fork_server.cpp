#include "launch/fork_server.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace pkb::launch {

namespace {

// Server -> parent, one message each.
enum Kind : int32_t { kReady = 1, kRefused, kSpawned, kExited };
struct Reply {
  int32_t kind = 0;
  int32_t pid = 0;    // kSpawned: the child (or -errno); kExited: the child
  int32_t value = 0;  // kExited: its wait status; kRefused: the server's thread count
};

// Parent -> server: {pgid, then the environment's entries, each ending in '\0'} with two
// descriptors, the rank's end of its bootstrap socket and of its output pipe.
constexpr size_t kMaxRequest = 1 << 20;

void send_reply(int sock, const Reply& r) {
  while (send(sock, &r, sizeof r, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

int threads_now() {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec); !ec && it != std::filesystem::end(it);
       it.increment(ec))
    ++n;
  return n;
}

// The wait status waitpid would give for what waitid(WNOWAIT) saw.
int wait_status(const siginfo_t& si) {
  switch (si.si_code) {
    case CLD_EXITED: return (si.si_status & 0xff) << 8;
    case CLD_KILLED: return si.si_status & 0x7f;
    case CLD_DUMPED: return (si.si_status & 0x7f) | 0x80;
    default: return 0;
  }
}

struct Request {
  pid_t pgid = 0;
  std::vector<std::string> env;
  int sock = -1, out = -1;
};

// A request's message header over `n` bytes at `data`, with room for its two descriptors.
struct RequestHeader {
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  iovec iov{};
  msghdr msg{};
  RequestHeader(void* data, size_t n) : iov{data, n} {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
};

// 1: a request; 0: the parent closed the channel; -1: a message that is not one (dropped).
int receive(int ctl, Request& req) {
  static std::vector<char> buf(kMaxRequest);
  RequestHeader h(buf.data(), buf.size());
  msghdr& msg = h.msg;
  ssize_t n;
  while ((n = recvmsg(ctl, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n <= 0) return 0;
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++k)
        fds.push_back(reinterpret_cast<int*>(CMSG_DATA(c))[k]);
  if (fds.size() != 2 || static_cast<size_t>(n) < sizeof(int32_t) || (msg.msg_flags & MSG_TRUNC)) {
    for (int fd : fds) close(fd);
    return -1;
  }
  int32_t pgid;
  std::memcpy(&pgid, buf.data(), sizeof pgid);
  req.pgid = pgid;
  req.env.clear();
  for (size_t i = sizeof pgid; i < static_cast<size_t>(n);) {
    const char* s = buf.data() + i;
    size_t len = strnlen(s, static_cast<size_t>(n) - i);
    req.env.emplace_back(s, len);
    i += len + 1;
  }
  req.sock = fds[0];
  req.out = fds[1];
  return 1;
}

// In the forked child: what spawn_rank's child does before exec, and the environment an
// exec would have given it. The limits came with the server (spawn_rank set them there).
void become_rank(const Request& req, pid_t server, const sigset_t& mask, int null_in) {
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  setpgid(0, req.pgid);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != server) _exit(127);
  dup2(req.out, 1);
  dup2(req.out, 2);
  dup2(null_in, 0);
  constexpr int kBootstrapFd = 3;
  if (req.sock != kBootstrapFd && dup2(req.sock, kBootstrapFd) < 0) _exit(127);
  fcntl(kBootstrapFd, F_SETFD, 0);
  close_inherited(kBootstrapFd);  // the channel, the signalfd, the received copies
  // Leaked on purpose: the process's environment from here on.
  auto* entries = new std::vector<std::string>(req.env);
  entries->push_back("PKB_BOOTSTRAP_FD=" + std::to_string(kBootstrapFd));
  auto* envp = new std::vector<char*>();
  for (auto& e : *entries) envp->push_back(e.data());
  envp->push_back(nullptr);
  environ = envp->data();
}

}  // namespace

void serve_forks(const ForkHooks& hooks) {
  const char* fd_env = std::getenv("PKB_BOOTSTRAP_FD");
  if (!fd_env) _exit(2);
  const int ctl = std::atoi(fd_env);
  // fork() copies one thread: a thread holding a lock in the server would hold it forever
  // in every rank. Only a server that is single-threaded serves.
  if (int n = threads_now(); n != 1) {
    send_reply(ctl, {kRefused, getpid(), n});
    _exit(0);
  }
  sigset_t chld, old;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &old);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  int null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (sfd < 0 || null_in < 0) _exit(2);
  const pid_t self = getpid();
  std::vector<pid_t> live;
  std::set<pid_t> reported;
  send_reply(ctl, {kReady, self, 1});
  for (;;) {
    pollfd fds[2] = {{ctl, POLLIN, 0}, {sfd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents) {
      signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) > 0) {
      }
      // Reported, not reaped: the zombie keeps its pid until the group ends.
      for (pid_t pid : live) {
        if (reported.count(pid)) continue;
        siginfo_t info{};
        if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
          reported.insert(pid);
          send_reply(ctl, {kExited, pid, wait_status(info)});
        }
      }
    }
    if (fds[0].revents) {
      Request req;
      int got = receive(ctl, req);
      if (got == 0) break;
      if (got < 0) continue;
      if (hooks.before) hooks.before();
      pid_t pid = fork();
      if (pid == 0) {
        become_rank(req, self, old, null_in);
        if (hooks.child) hooks.child(environ);
        return;
      }
      if (hooks.parent) hooks.parent();
      if (pid > 0) {
        setpgid(pid, req.pgid ? req.pgid : pid);  // as the child does: whichever runs first
        live.push_back(pid);
      }
      send_reply(ctl, {kSpawned, pid > 0 ? pid : -errno, 0});
      close(req.sock);
      close(req.out);
    }
  }
  // The group is over (or its parent gone): nothing of it outlives the server.
  for (pid_t pid : live) kill(pid, SIGKILL);
  for (pid_t pid : live)
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  _exit(0);
}

ForkServer::ForkServer(const std::vector<std::string>& argv, std::vector<std::string> env, const Limits& limits,
                       unsigned long long nproc, double ready_s) {
  try {
    Spawned sp = spawn_rank(argv, std::move(env), 0, limits, nproc, SOCK_SEQPACKET);
    pid_ = sp.pid;
    ctl_ = sp.sock;
    out_ = sp.out;
  } catch (const std::exception& e) {
    why_not_ = e.what();
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(ready_s);
  while (!ok_ && !gone_ && why_not_.empty() && std::chrono::steady_clock::now() < deadline) read_messages(0.1);
  if (!ok_ && why_not_.empty())
    why_not_ = gone_ ? "it exited before it was ready"
                     : "it was not ready within " + std::to_string(static_cast<int>(ready_s)) + " s";
}

ForkServer::~ForkServer() {
  if (ctl_ >= 0) close(ctl_);
  if (pid_ > 0) {
    // It kills and reaps its children, then exits: a moment. Past 10 s, it is stuck.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (out_ >= 0) close(out_);
}

bool ForkServer::read_messages(double timeout_s) {
  bool any = false;
  for (;;) {
    pollfd p{ctl_, POLLIN, 0};
    int rc = poll(&p, 1, any ? 0 : static_cast<int>(timeout_s * 1000));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return any;
    Reply r;
    ssize_t n = recv(ctl_, &r, sizeof r, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return any;
    if (n <= 0) {
      gone_ = true;
      return any;
    }
    any = true;
    if (n != sizeof r) continue;
    switch (r.kind) {
      case kReady: ok_ = true; break;
      case kRefused: why_not_ = "it had " + std::to_string(r.value) + " threads where fork() needs one"; break;
      case kSpawned:
        spawned_ = r.pid;
        answered_ = true;
        break;
      case kExited: pending_.emplace_back(r.pid, r.value); break;
      default: break;
    }
  }
}

Spawned ForkServer::spawn(const std::vector<std::string>& env, pid_t pgid) {
  int sv[2], out[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("fork server: ") + strerror(errno));
  std::string body(sizeof(int32_t), '\0');
  int32_t g = pgid;
  std::memcpy(body.data(), &g, sizeof g);
  for (auto& e : env) body.append(e.c_str(), e.size() + 1);
  if (body.size() > kMaxRequest) throw std::runtime_error("fork server: the rank's environment is over 1 MiB");
  RequestHeader h(body.data(), body.size());
  msghdr& msg = h.msg;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(2 * sizeof(int));
  int fds[2] = {sv[1], out[1]};
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  answered_ = false;
  ssize_t n;
  while ((n = sendmsg(ctl_, &msg, MSG_NOSIGNAL)) < 0 && (errno == EINTR || errno == EAGAIN)) {
    pollfd p{ctl_, POLLOUT, 0};
    poll(&p, 1, 100);
  }
  int err = errno;
  close(sv[1]);
  close(out[1]);
  auto fail = [&](const std::string& why) {
    close(sv[0]);
    close(out[0]);
    throw std::runtime_error("fork server: " + why);
  };
  if (n < 0) fail(strerror(err));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!answered_ && !gone_ && std::chrono::steady_clock::now() < deadline) read_messages(0.1);
  if (!answered_) fail(gone_ ? "it exited" : "no answer within 30 s");
  if (spawned_ < 0) fail(std::string("fork: ") + strerror(-spawned_));
  fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  return {spawned_, sv[0], out[0]};
}

std::vector<std::pair<pid_t, int>> ForkServer::exits(double timeout_s) {
  if (!gone_) read_messages(pending_.empty() ? timeout_s : 0);
  std::vector<std::pair<pid_t, int>> out;
  out.swap(pending_);
  return out;
}

}  // namespace pkb::launch
