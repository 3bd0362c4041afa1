// BAD CANDIDATE for coll_allreduce (CPU device), a pkb sandbox test.
// Expected verdict: integrity_violation (its Unix-domain socket, the first call seccomp denies)
//
// What it tries, once, on its first call, printing one line per attempt,
//   "probe <what> <target>: allowed" | "...: denied (<error>)" | "...: failed (<error>)"
// (tests/runtime/sandbox_test.cpp reads them with --echo; "failed" is an error other than
// a refusal, such as a file that is not there):
//   files   - to leave a file where a later evaluation could find it: /dev/shm, /tmp,
//             /var/tmp, the user's real home, pkb's cache, its own build folder, the current
//             folder; and to open its own library for writing (the cached build);
//   secrets - to read /etc/shadow, ~/.ssh/*, ~/.aws/credentials, ~/.git-credentials,
//             ~/.netrc, ~/.docker/config.json, ~/.config/gcloud, the list of processes, pkb's
//             /proc/<pid>/environ (API keys) and cmdline (a sweep's --seed), and another
//             rank's;
//   unix    - to open a Unix-domain socket and connect to the abstract one PKB_TEST_ABSTRACT
//             names (a test listens there);
//   signal  - to signal pkb (kill(ppid, 0)) and get a handle on it (pidfd_open);
//   memory  - to read pkb's memory (process_vm_readv) and compare its files with its own (kcmp);
//   descriptors - lists what its descriptors are ("probe descriptor <n> <target>") and
//             tries to list pkb's ("probe parent-descriptor ..." when it can): whatever pkb
//             inherited from its caller must not reach a rank.
// "pkb" is the process running the evaluation: the rank's parent, or the parent of pkb's
// fork server where the ranks are forked from one (found where /proc lets it look).
// PKB_PROBE picks groups (comma-separated; all by default). The home is the password
// database's, and PKB_TEST_HOME's too where a test stands one in with planted secrets.
// Its outputs are right: what Landlock denies shows only in its lines, what seccomp denies
// in the verdict.
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <signal.h>

#include <string>
#include <vector>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

pid_t pkb_pid() {
  pid_t parent = getppid();
  std::string dir = "/proc/" + std::to_string(parent);
  FILE* f = fopen((dir + "/cmdline").c_str(), "r");
  if (!f) return parent;
  char cmd[512] = {};
  size_t n = fread(cmd, 1, sizeof cmd - 1, f);
  fclose(f);
  size_t first = strnlen(cmd, n);
  if (first + 1 >= n || strcmp(cmd + first + 1, "__fork_server") != 0) return parent;
  // /proc/<pid>/stat: "pid (name) state ppid ..."
  f = fopen((dir + "/stat").c_str(), "r");
  if (!f) return parent;
  char stat[512] = {};
  n = fread(stat, 1, sizeof stat - 1, f);
  fclose(f);
  const char* close_paren = strrchr(stat, ')');
  int ppid = 0;
  return close_paren && sscanf(close_paren + 1, " %*c %d", &ppid) == 1 ? ppid : parent;
}

void allreduce(pkb_ctx* ctx, const void* x, void* y, size_t n) {
  const uint16_t* xs[64];
  for (int p = 0; p < ctx->world; ++p) xs[p] = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, x, p));
  uint16_t* out = static_cast<uint16_t*>(y);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int p = 0; p < ctx->world; ++p) acc += pkb::host::bf16_to_float(xs[p][i]);
    out[i] = pkb::host::float_to_bf16(acc);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
}

bool wanted(const char* group) {
  const char* only = getenv("PKB_PROBE");
  if (!only || !*only) return true;
  std::string list = std::string(",") + only + ",";
  return list.find(std::string(",") + group + ",") != std::string::npos;
}

// One line per attempt: `rc` < 0 is a failure with errno set.
void report(const char* what, const std::string& target, long rc) {
  int e = errno;
  if (rc >= 0) printf("probe %s %s: allowed\n", what, target.c_str());
  else printf("probe %s %s: %s (%s)\n", what, target.c_str(), e == EACCES || e == EPERM ? "denied" : "failed", strerror(e));
  fflush(stdout);
}

void try_write(const std::string& dir, const std::string& name) {
  std::string path = dir + "/" + name;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  long rc = fd;
  if (fd >= 0) {
    rc = write(fd, "written by a candidate\n", 23);
    close(fd);
  }
  report("write", path, rc);
}

void try_read(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  long rc = fd;
  if (fd >= 0) {
    char buf[64];
    rc = read(fd, buf, sizeof buf);
    close(fd);
  }
  report("read", path, rc);
}

// The folder's entries (none when it cannot be listed), after a line for the listing.
std::vector<std::string> try_list(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  report("list", dir, d ? 0 : -1);
  if (!d) return names;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  closedir(d);
  return names;
}

std::vector<std::string> homes() {
  std::vector<std::string> out;
  if (passwd* pw = getpwuid(getuid())) out.push_back(pw->pw_dir);
  if (const char* h = getenv("PKB_TEST_HOME")) out.push_back(h);
  return out;
}

std::string own_folder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&allreduce), &info) || !info.dli_fname) return "";
  std::string lib = info.dli_fname;
  return lib.substr(0, lib.rfind('/'));
}

std::string own_library() {
  Dl_info info{};
  return dladdr(reinterpret_cast<void*>(&allreduce), &info) && info.dli_fname ? info.dli_fname : "";
}

void probe_files(int rank) {
  const char* tag = getenv("PKB_TEST_TAG");
  std::string name = std::string("pkb-probe-") + (tag ? tag : "gallery") + "-r" + std::to_string(rank);
  for (const char* dir : {"/dev/shm", "/tmp", "/var/tmp"}) try_write(dir, name);
  for (auto& h : homes()) try_write(h, name);
  if (const char* c = getenv("PKB_CACHE_DIR")) try_write(c, name);
  else if (passwd* pw = getpwuid(getuid())) try_write(std::string(pw->pw_dir) + "/.cache/pkb", name);
  try_write(own_folder(), name);
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd)) try_write(cwd, name);
  std::string lib = own_library();
  int fd = open(lib.c_str(), O_WRONLY | O_CLOEXEC);  // opened, never written
  report("open-for-writing", lib, fd);
  if (fd >= 0) close(fd);
}

void probe_secrets(int rank) {
  try_read("/etc/shadow");
  for (auto& h : homes()) {
    std::vector<std::string> keys = {"id_rsa", "id_ed25519"};
    for (auto& n : try_list(h + "/.ssh"))
      if (n != "id_rsa" && n != "id_ed25519") keys.push_back(n);
    for (auto& k : keys) try_read(h + "/.ssh/" + k);
    for (const char* f : {"/.aws/credentials", "/.git-credentials", "/.netrc", "/.docker/config.json"}) try_read(h + f);
    try_list(h + "/.config/gcloud");
  }
  try_list("/proc");
  std::string parent = "/proc/" + std::to_string(pkb_pid());
  try_read(parent + "/environ");
  try_read(parent + "/cmdline");
  // Rank 0 leads the ranks' process group: the others know its pid.
  if (rank > 0) {
    std::string peer = "/proc/" + std::to_string(getpgrp());
    try_read(peer + "/environ");
    try_read(peer + "/cmdline");
  }
}

void probe_unix() {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  report("socket", "AF_UNIX", s);
  const char* name = getenv("PKB_TEST_ABSTRACT");
  if (!name) return;
  if (s < 0) {
    printf("probe connect @%s: failed (no socket)\n", name);
    fflush(stdout);
    return;
  }
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  size_t n = strnlen(name, sizeof a.sun_path - 2);
  memcpy(a.sun_path + 1, name, n);  // sun_path[0] == 0: the abstract namespace
  report("connect", std::string("@") + name,
         connect(s, reinterpret_cast<sockaddr*>(&a), static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n)));
  close(s);
}

void probe_signal() {
  pid_t parent = pkb_pid();
  report("kill", "pid " + std::to_string(parent), kill(parent, 0));
  long fd = syscall(SYS_pidfd_open, parent, 0);
  report("pidfd_open", "pid " + std::to_string(parent), fd);
  if (fd >= 0) close(static_cast<int>(fd));
}

void probe_memory() {
  pid_t parent = pkb_pid();
  char mine[16], theirs[16];
  iovec local{mine, sizeof mine}, remote{theirs, sizeof theirs};  // an address of ours, maybe not of pkb's
  long rc = process_vm_readv(parent, &local, 1, &remote, 1, 0);
  if (rc < 0 && errno == EFAULT) rc = 0;  // let through, to an address that is not there
  report("process_vm_readv", "pid " + std::to_string(parent), rc);
  report("kcmp", "pid " + std::to_string(parent), syscall(SYS_kcmp, getpid(), parent, 0 /* KCMP_FILE */, 1, 1));
}

// Its own descriptors (listing them is no attempt), or pkb's (an attempt).
void print_descriptors(const std::string& dir, const char* label, bool attempt) {
  std::vector<std::string> names;
  if (attempt) {
    names = try_list(dir);
  } else if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
  }
  for (auto& n : names) {
    char target[512];
    ssize_t len = readlink((dir + "/" + n).c_str(), target, sizeof target - 1);
    target[len > 0 ? len : 0] = 0;
    printf("probe %s %s %s\n", label, n.c_str(), target);
  }
  fflush(stdout);
}

void probe_descriptors() {
  print_descriptors("/proc/self/fd", "descriptor", false);
  print_descriptors("/proc/" + std::to_string(pkb_pid()) + "/fd", "parent-descriptor", true);
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  static bool probed = false;
  if (!probed) {
    probed = true;
    if (wanted("files")) probe_files(ctx->rank);
    if (wanted("secrets")) probe_secrets(ctx->rank);
    if (wanted("unix")) probe_unix();
    if (wanted("signal")) probe_signal();
    if (wanted("memory")) probe_memory();
    if (wanted("descriptors")) probe_descriptors();
  }
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  allreduce(ctx, in[0].data, out[0].data, n);
  return 0;
}
