// What candidates cannot do, end to end on the CPU device, with the gallery's sandbox probes
// (tests/candidates/cpu, tests/candidates/py): see no secret, write nowhere but their
// scratch, open no network or Unix-domain connection, signal or read no other process,
// start no process, leave nothing running or stored for a later evaluation; and the timing
// attacks a sandbox does not stop: replays by content never pay, processes left behind
// without the sandbox are ended. Each also through --no-sandbox, where the probe must see
// what it looks for: that is what makes the sandboxed run's "nothing seen" mean something.
// The layers alone (rank/sandbox.hpp) are checked in forked children of this process.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sched.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "rank/sandbox.hpp"
#include "support.hpp"

using namespace pkbtest;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kCandidates = std::string(PKB_SOURCE_DIR) + "/tests/candidates/";
const std::string kGallery = kCandidates + "cpu/";

struct Eval {
  PkbRun run;
  json result;
};

// `file` under tests/candidates/, on coll_allreduce at W ranks of the CPU device.
Eval eval_file(const std::string& file, int world, std::vector<std::string> extra = {},
               const std::vector<std::pair<std::string, std::string>>& env = {}) {
  std::string out = temp_dir("sandbox-" + fs::path(file).stem().string()) + "/r.json";
  std::vector<std::string> args = {"eval", "-p", "coll_allreduce", "-s", kCandidates + file, "--device",
                                   "cpu", "-w", std::to_string(world), "--trials", "3", "--warmup", "5", "--iters",
                                   "10", "--timeout", "60", "--json", out};
  args.insert(args.end(), extra.begin(), extra.end());
  Eval e;
  e.run = run_pkb(args, 600, env);
  std::ifstream f(out);
  e.result = json::parse(f, nullptr, false);
  return e;
}

Eval eval(const std::string& candidate, std::vector<std::string> extra = {},
          const std::vector<std::pair<std::string, std::string>>& env = {}) {
  return eval_file("cpu/" + candidate + ".cpp", 4, extra, env);
}

// One line of a probe (tests/candidates/*/sandbox_probe.*), as --echo shows it.
struct Attempt {
  int rank;
  std::string what, target, outcome;  // outcome: allowed, denied or failed
};

std::vector<Attempt> attempts(const std::string& echoed) {
  static const std::regex line(R"(^\[rank (\d+)\] probe (\S+) (.+?): (allowed|denied|failed)( \(.*\))?$)");
  std::vector<Attempt> out;
  std::istringstream in(echoed);
  std::smatch m;
  for (std::string l; std::getline(in, l);)
    if (std::regex_match(l, m, line)) out.push_back({std::stoi(m[1]), m[2], m[3], m[4]});
  return out;
}

const Attempt* find(const std::vector<Attempt>& all, const std::string& what, const std::string& target) {
  for (auto& a : all)
    if (a.what == what && a.target == target) return &a;
  return nullptr;
}

std::string outcome(const std::vector<Attempt>& all, const std::string& what, const std::string& target) {
  const Attempt* a = find(all, what, target);
  return a ? a->outcome : "not tried";
}

// A home with the secrets a user has, standing in for the real one (PKB_TEST_HOME).
std::string planted_home() {
  std::string home = temp_dir("planted-home");
  for (const char* f : {".ssh/id_ed25519", ".aws/credentials", ".git-credentials", ".netrc", ".docker/config.json",
                        ".config/gcloud/credentials.db"}) {
    fs::create_directories(fs::path(home + "/" + f).parent_path());
    std::ofstream(home + "/" + f) << "secret\n";
  }
  return home;
}

// A listening abstract Unix socket (non-blocking), for probes to try to reach.
int abstract_listener(const std::string& name) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  memcpy(a.sun_path + 1, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(s, 16) != 0) return -1;
  return s;
}

int accepted(int listener) {
  int n = 0;
  for (int fd; (fd = accept(listener, nullptr, nullptr)) >= 0; ++n) close(fd);
  return n;
}

std::string home_probe() {
  passwd* pw = getpwuid(getuid());
  return std::string(pw ? pw->pw_dir : "/nonexistent") + "/pkb-sandbox-probe.txt";
}

}  // namespace

TEST(Sandbox, SecretsInTheEnvironmentStayOutside) {
  std::vector<std::pair<std::string, std::string>> env = {{"OPENAI_API_KEY", "sk-test-not-a-key"},
                                                          {"PKB_TEST_SECRET_TOKEN", "x"}};
  Eval e = eval("read_secret", {}, env);
  EXPECT_EQ(e.result["verdict"], "correct") << e.run.out << e.run.err;
  // The probe sees a key when pkb lets it through: on purpose (--pass-env) or unconfined.
  Eval passed = eval("read_secret", {"--pass-env", "OPENAI_API_KEY"}, env);
  EXPECT_EQ(passed.result["verdict"], "wrong") << passed.run.out;
  Eval open = eval("read_secret", {"--no-sandbox"}, env);
  EXPECT_EQ(open.result["verdict"], "wrong") << open.run.out;
  EXPECT_TRUE(contains(open.run.out + open.run.err, "warning: --no-sandbox")) << open.run.out;
}

TEST(Sandbox, WritesOutsideTheScratchFolderAreDenied) {
  std::string results = temp_dir("sandbox-results");
  fs::remove(home_probe());
  Eval e = eval("write_files", {}, {{"PKB_TEST_RESULTS_DIR", results}});
  EXPECT_EQ(e.result["verdict"], "correct") << e.run.out << e.run.err;
  EXPECT_FALSE(fs::exists(results + "/pkb-sandbox-probe.txt"));
  EXPECT_FALSE(fs::exists(home_probe()));
  if (!e.result["sandbox"].value("filesystem", false)) GTEST_SKIP() << "no Landlock in this kernel: " << e.result["sandbox"];
  Eval open = eval("write_files", {"--no-sandbox"}, {{"PKB_TEST_RESULTS_DIR", results}});
  EXPECT_EQ(open.result["verdict"], "wrong") << open.run.out;
  EXPECT_TRUE(fs::exists(results + "/pkb-sandbox-probe.txt"));
  fs::remove(home_probe());
}

TEST(Sandbox, NetworkConnectionsAreDeniedAndReported) {
  int server = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(server, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(server, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(server, 16), 0);
  socklen_t len = sizeof a;
  getsockname(server, reinterpret_cast<sockaddr*>(&a), &len);
  std::string port = std::to_string(ntohs(a.sin_port));

  Eval e = eval("connect_tcp", {}, {{"PKB_TEST_PORT", port}});
  EXPECT_EQ(e.run.code, 6) << e.run.out << e.run.err;
  EXPECT_EQ(e.result["verdict"], "integrity_violation");
  EXPECT_TRUE(contains(e.result["message"], "socket(AF_INET/AF_INET6)")) << e.result["message"];
  EXPECT_EQ(accept(server, nullptr, nullptr), -1) << "a rank reached the server";
  EXPECT_TRUE(survivors(e.run.tag).empty());

  Eval open = eval("connect_tcp", {"--no-sandbox"}, {{"PKB_TEST_PORT", port}});
  EXPECT_EQ(open.result["verdict"], "correct") << open.run.out;
  int reached = 0;
  for (int fd; (fd = accept(server, nullptr, nullptr)) >= 0; ++reached) close(fd);
  EXPECT_EQ(reached, 4) << "every rank connects when unconfined";
  close(server);
}

TEST(Sandbox, AForkBombIsStoppedAndNothingIsLeft) {
  Eval e = eval("fork_bomb");
  EXPECT_EQ(e.result["verdict"], "integrity_violation") << e.run.out << e.run.err;
  EXPECT_TRUE(contains(e.result["message"], "starting a process")) << e.result["message"];
  EXPECT_LT(e.run.seconds, 120);
  EXPECT_TRUE(survivors(e.run.tag).empty());
}

TEST(Sandbox, ChildrenLeftRunningAreEndedWithTheGroup) {
  Eval e = eval("orphan_child", {"--no-sandbox"});
  EXPECT_EQ(e.result["verdict"], "correct") << e.run.out << e.run.err;
  EXPECT_GE(e.result["run"]["leftovers_ended"].get<int>(), 4);  // one child per rank at least
  EXPECT_NE(e.result["flags"].dump().find("left_processes"), std::string::npos) << e.result["flags"];
  EXPECT_TRUE(survivors(e.run.tag, 0.5).empty());
}

// Every call's inputs are written by its judge just before the call: a candidate that
// replays results by input content never finds one to replay, so its slow honest path is
// what is timed (a replay would show as a large speedup).
TEST(Integrity, ReplayByContentNeverPays) {
  Eval e = eval("replay_by_content");
  ASSERT_EQ(e.result["verdict"], "correct") << e.run.out << e.run.err;
  // Its honest path sleeps 20 ms a call; a replay is a copy of well under a millisecond.
  EXPECT_GT(e.result["timing"]["candidate"]["min_us"].get<double>(), 15000) << e.result["timing"];
}

// A sweep over the sandbox probes and a good candidate: every verdict as expected and the
// results file whole, whatever the probes tried.
TEST(Sandbox, SweepIsUnharmed) {
  std::string root = temp_dir("sandbox-sweep"), dir = root + "/solutions_cpu/probes/coll_allreduce";
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> probes = {
      {"read_secret", "correct"}, {"write_files", "correct"}, {"connect_tcp", "integrity_violation"},
      {"fork_bomb", "integrity_violation"}, {"orphan_child", "integrity_violation"}};
  std::map<int, std::string> expected;
  for (size_t k = 0; k < probes.size(); ++k) {
    fs::copy_file(kGallery + probes[k].first + ".cpp", dir + "/sample_" + std::to_string(k) + ".cpp");
    expected[int(k)] = probes[k].second;
  }
  fs::copy_file(std::string(PKB_SOURCE_DIR) + "/solutions_cpu/coll_allreduce.cpp", dir + "/sample_9.cpp");
  expected[9] = "correct";
  std::string results = root + "/results.jsonl";
  PkbRun r = run_pkb({"sweep", "--solutions", root + "/solutions_cpu", "--problems", "coll_allreduce", "--device",
                      "cpu", "-w", "4", "--trials", "3", "--warmup", "3", "--iters", "5", "--timeout", "30", "--out",
                      results},
                     1800, {{"OPENAI_API_KEY", "sk-test-not-a-key"}, {"PKB_TEST_RESULTS_DIR", root}});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::ifstream f(results);
  int lines = 0;
  for (std::string line; std::getline(f, line); ++lines) {
    json j = json::parse(line);
    int sample = j["sweep"]["sample"];
    EXPECT_EQ(j["verdict"], expected.at(sample)) << line.substr(0, 400);
  }
  EXPECT_EQ(lines, int(expected.size()));
  EXPECT_FALSE(fs::exists(root + "/pkb-sandbox-probe.txt"));
  EXPECT_TRUE(survivors(r.tag).empty());
}

// ---- the layers alone, in forked children of this process -----------------------------------

namespace {

// Runs `body` in a forked child (which may enter the sandbox: this process never does) and
// returns what it reported: "" when all was well.
std::string in_child(const std::function<std::string()>& body) {
  int p[2];
  if (pipe(p) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    std::string out = body();
    if (!out.empty() && ::write(p[1], out.data(), out.size()) < 0) _exit(2);
    _exit(0);
  }
  close(p[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) out += "the child ended with status " + std::to_string(status);
  return out;
}

std::string enter(const std::vector<std::string>& writable = {}) {
  auto st = pkb::rank::enter_sandbox(pkb::rank::rank_paths({}, writable));
  return st.filesystem && st.seccomp ? "" : "sandbox not entered: " + st.note + "\n";
}

// "" when `rc` and errno are as expected, else a line saying what happened.
std::string expect(const std::string& what, long rc, int want_errno) {
  int e = errno;
  if (want_errno == 0) return rc >= 0 ? "" : what + ": refused (" + strerror(e) + "), should be allowed\n";
  if (rc >= 0) return what + ": allowed, should be refused\n";
  return e == want_errno ? "" : what + ": " + strerror(e) + ", should be " + strerror(want_errno) + "\n";
}

std::string expect_violation(const std::string& what, const std::string& names) {
  std::string v = pkb::rank::take_violation();
  return v.find(names) != std::string::npos ? "" : what + ": recorded \"" + v + "\", should name " + names + "\n";
}

long open_read(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) close(fd);
  return fd;
}

long create(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) close(fd);
  return fd;
}

bool have_landlock() { return pkb::rank::sandbox_support().filesystem; }

}  // namespace

TEST(SandboxLayers, ReadPathsNeverCoverHiddenPlaces) {
  passwd* pw = getpwuid(getuid());
  ASSERT_NE(pw, nullptr);
  std::string home = fs::weakly_canonical(pw->pw_dir).string();
  // A memfd mapping shows in /proc/self/maps as "/memfd:... (deleted)": never a rule for "/".
  int mfd = static_cast<int>(syscall(SYS_memfd_create, "pkb-test", 0));
  ASSERT_GE(mfd, 0);
  ASSERT_EQ(ftruncate(mfd, 4096), 0);
  void* m = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, mfd, 0);
  ASSERT_NE(m, MAP_FAILED);
  std::string sub = temp_dir("sub-of-tmp");
  auto p = pkb::rank::rank_paths({"/", home, "/tmp", "/dev/shm", "/etc", "/proc", "/usr/lib", sub}, {});
  munmap(m, 4096);
  close(mfd);
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  for (const std::string& bad : std::vector<std::string>{"/", home, "/tmp", "/dev/shm", "/etc", "/proc", "/run", "/dev"})
    EXPECT_FALSE(has(p.read, bad)) << bad;
  EXPECT_TRUE(has(p.read, "/usr/lib"));
  EXPECT_TRUE(has(p.read, sub));  // beneath /tmp, but covering nothing hidden
  EXPECT_TRUE(has(p.read, "/etc/ld.so.cache"));
  EXPECT_FALSE(has(p.read, "/etc/shadow"));
  EXPECT_TRUE(has(p.read_write, "/proc/" + std::to_string(getpid())));
  EXPECT_TRUE(has(p.read_write, "/dev/null"));
  EXPECT_FALSE(has(p.read_write, "/dev/shm"));
  EXPECT_TRUE(p.write.empty()) << p.write.front();
}

TEST(SandboxLayers, ARankReadsWhatItNeedsAndWritesOnlyItsScratch) {
  if (!have_landlock()) GTEST_SKIP() << "no Landlock in this kernel";
  std::string scratch = temp_dir("layers-scratch"), outside = temp_dir("layers-outside");
  std::ofstream(outside + "/secret") << "secret\n";
  std::string found = in_child([&] {
    std::string parent = "/proc/" + std::to_string(getppid());
    std::string r = enter({scratch});
    if (!r.empty()) return r;
    for (const char* ok : {"/etc/passwd", "/etc/ld.so.cache", "/proc/self/status", "/proc/self/maps", "/proc/cpuinfo",
                           "/proc/meminfo", "/proc/sys/kernel/pid_max", "/usr/include/stdio.h",
                           "/sys/devices/system/cpu/online"})
      if (fs::exists(ok)) r += expect(std::string("read ") + ok, open_read(ok), 0);
    for (const std::string& hidden : {std::string("/etc/shadow"), parent + "/environ", parent + "/cmdline",
                                      parent + "/status", std::string("/proc/1/cmdline"), outside + "/secret"})
      r += expect("read " + hidden, open_read(hidden), EACCES);
    r += expect("list /proc", open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), EACCES);
    for (const char* kernel : {"/sys/kernel/debug", "/sys/kernel/tracing", "/sys/firmware"})
      if (fs::exists(kernel)) r += expect(std::string("list ") + kernel, open(kernel, O_RDONLY | O_DIRECTORY), EACCES);
    r += expect("write /dev/null", open("/dev/null", O_WRONLY | O_CLOEXEC), 0);
    r += expect("write the scratch folder", create(scratch + "/mine"), 0);
    for (const std::string& place : {std::string("/dev/shm"), std::string("/tmp"), std::string("/var/tmp"), outside})
      r += expect("write " + place, create(place + "/pkb-layers-probe"), EACCES);
    r += expect("name a thread (/proc/self/task/*/comm)",
                open("/proc/thread-self/comm", O_WRONLY | O_TRUNC | O_CLOEXEC), 0);
    return r;
  });
  EXPECT_EQ(found, "");
  EXPECT_TRUE(fs::exists(scratch + "/mine"));
  for (const char* place : {"/dev/shm", "/tmp", "/var/tmp"}) EXPECT_FALSE(fs::exists(std::string(place) + "/pkb-layers-probe"));
}

// A thread that ran before the sandbox (as NCCL's, gloo's and CUDA's do in a rank) is held
// by Landlock too, not only by seccomp: code that gets it to open a file there meets the
// same rules as the candidate's own thread. One that blocks the signal is counted.
TEST(SandboxLayers, ThreadsRunningBeforeAreConfinedToo) {
  if (!have_landlock()) GTEST_SKIP() << "no Landlock in this kernel";
  std::string scratch = temp_dir("layers-threads"), outside = temp_dir("layers-threads-outside");
  std::ofstream(outside + "/secret") << "secret\n";
  std::string found = in_child([&] {
    std::atomic<int> step{0};
    long read_rc = 0, create_rc = 0;
    int read_errno = 0, create_errno = 0;
    std::thread earlier([&] {
      while (step == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      read_rc = open_read(outside + "/secret");
      read_errno = errno;
      create_rc = create(outside + "/left-behind");
      create_errno = errno;
      step = 2;
    });
    // A second one that blocks every signal: the sandbox cannot reach it, and says so.
    std::atomic<bool> done{false};
    std::thread deaf([&] {
      sigset_t all;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, nullptr);
      while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // both run before the sandbox
    auto st = pkb::rank::enter_sandbox(pkb::rank::rank_paths({}, {scratch}));
    step = 1;
    while (step != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    done = true;
    earlier.join();
    deaf.join();
    std::string r = st.filesystem ? "" : "sandbox not entered: " + st.note + "\n";
    errno = read_errno;
    r += expect("read a file outside, from a thread that ran before", read_rc, EACCES);
    errno = create_errno;
    r += expect("create a file outside, from a thread that ran before", create_rc, EACCES);
    if (st.threads_confined < 1) r += "threads_confined " + std::to_string(st.threads_confined) + ", want >= 1\n";
    if (st.threads_unconfined != 1) r += "threads_unconfined " + std::to_string(st.threads_unconfined) + ", want 1\n";
    if (st.note.find("1 thread(s) started before the sandbox block signals") == std::string::npos)
      r += "the note does not say so: " + st.note + "\n";
    return r;
  });
  EXPECT_EQ(found, "");
  EXPECT_FALSE(fs::exists(outside + "/left-behind"));
}

// Mode, owner, extended attributes, times and size of a file outside: Landlock's write rules
// do not cover the first four, seccomp refuses them; truncate(2) is Landlock's (ABI 3).
TEST(SandboxLayers, FilesOutsideKeepTheirMetadata) {
  if (!have_landlock()) GTEST_SKIP() << "no Landlock in this kernel";
  std::string f = temp_dir("layers-metadata") + "/file";
  std::ofstream(f) << "twelve bytes";
  struct stat before{};
  ASSERT_EQ(stat(f.c_str(), &before), 0);
  std::string found = in_child([&] {
    std::string r = enter();
    if (!r.empty()) return r;
    r += expect("chmod", chmod(f.c_str(), 0777), EPERM);
    r += expect("chown", chown(f.c_str(), getuid(), getgid()), EPERM);
    r += expect("setxattr", setxattr(f.c_str(), "user.pkb", "x", 1, 0), EPERM);
    timespec times[2] = {{1, 0}, {1, 0}};
    r += expect("utimensat", utimensat(AT_FDCWD, f.c_str(), times, 0), EPERM);
    // Landlock's own right from ABI 3, seccomp's refusal before.
    r += expect("truncate", truncate(f.c_str(), 0), pkb::rank::sandbox_support().landlock_abi >= 3 ? EACCES : EPERM);
    return r;
  });
  EXPECT_EQ(found, "");
  struct stat after{};
  ASSERT_EQ(stat(f.c_str(), &after), 0);
  EXPECT_EQ(after.st_mode, before.st_mode);
  EXPECT_EQ(after.st_size, before.st_size);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_LT(getxattr(f.c_str(), "user.pkb", nullptr, 0), 0);
}

// Sockets, signals, other processes' memory, System V IPC and keyrings: denied and recorded
// (by name) on the thread that entered and threads it starts, and denied on a thread that
// was running before it did (seccomp is every thread's; that thread is a library's, so it is
// not recorded against the candidate); the rank's own signals still work.
TEST(SandboxLayers, NoWayOutOfTheRank) {
  if (!have_landlock()) GTEST_SKIP() << "no Landlock in this kernel";
  std::string name = "pkb-test-" + std::to_string(getpid()) + "-layers";
  int listener = abstract_listener(name);
  ASSERT_GE(listener, 0);
  bool scoped = pkb::rank::sandbox_support().scoped;
  std::string found = in_child([&] {
    pid_t parent = getppid();
    int before = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);  // made before: only the scope stops it
    std::atomic<bool> go{false};
    int thread_errno = 0;
    long thread_rc = 0;
    std::thread earlier([&] {
      while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      thread_rc = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      thread_errno = errno;
    });
    std::string r = enter();
    if (!r.empty()) {
      go = true;
      earlier.join();
      return r;
    }
    r += expect("socket(AF_UNIX)", socket(AF_UNIX, SOCK_STREAM, 0), EPERM);
    r += expect_violation("socket(AF_UNIX)", "socket(AF_UNIX)");
    r += expect("socket(AF_INET)", socket(AF_INET, SOCK_STREAM, 0), EPERM);
    r += expect_violation("socket(AF_INET)", "socket(AF_INET/AF_INET6)");
    int pair[2];
    r += expect("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
    if (scoped) {
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      memcpy(a.sun_path + 1, name.data(), name.size());
      socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
      r += expect("connect to an abstract socket outside", connect(before, reinterpret_cast<sockaddr*>(&a), len), EPERM);
    }
    r += expect("kill(parent)", kill(parent, 0), EPERM);
    r += expect_violation("kill(parent)", "kill(pid " + std::to_string(parent) + ")");
    r += expect("kill(0): the process group", kill(0, 0), EPERM);
    r += expect_violation("kill(0)", "kill(pid 0)");
    r += expect("tkill", syscall(SYS_tkill, gettid(), 0), EPERM);
    r += expect_violation("tkill", "tkill");
    r += expect("pidfd_open(parent)", syscall(SYS_pidfd_open, parent, 0), EPERM);
    r += expect_violation("pidfd_open", "pidfd_open(pid ");
    r += expect("ptrace(PTRACE_ATTACH, parent)", syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, parent, 0, 0), EPERM);
    r += expect_violation("ptrace", "ptrace");
    char buf[8];
    iovec local{buf, sizeof buf}, remote{buf, sizeof buf};
    r += expect("process_vm_readv(parent)", process_vm_readv(parent, &local, 1, &remote, 1, 0), EPERM);
    r += expect_violation("process_vm_readv", "process_vm_readv");
    r += expect("fcntl(F_SETOWN, parent)", fcntl(pair[0], F_SETOWN, parent), EPERM);
    r += expect_violation("fcntl", "fcntl(F_SETOWN)");
    r += expect("shmget", shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600), EPERM);
    r += expect_violation("shmget", "shmget");
    r += expect("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -4 /* the user's */, 0), EPERM);
    r += expect_violation("keyctl", "keyctl");
    r += expect("setpriority(parent)", setpriority(PRIO_PROCESS, static_cast<id_t>(parent), 19), EPERM);
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(0, &cpus);
    r += expect("sched_setaffinity(parent)", sched_setaffinity(parent, sizeof cpus, &cpus), EPERM);
    // Its own: signals to itself and its threads, its own scheduling.
    r += expect("kill(self)", kill(getpid(), 0), 0);
    static std::atomic<int> caught{0};
    signal(SIGUSR1, [](int) { ++caught; });
    r += expect("raise(SIGUSR1)", raise(SIGUSR1), 0);
    if (caught != 1) r += "raise: the handler did not run\n";
    r += expect("setpriority(self)", setpriority(PRIO_PROCESS, 0, getpriority(PRIO_PROCESS, 0)), 0);
    std::string none = pkb::rank::take_violation();
    if (!none.empty()) r += "the rank's own calls were recorded: " + none + "\n";
    go = true;
    earlier.join();
    if (thread_rc >= 0 || thread_errno != EPERM)
      r += "a thread started before the sandbox opened a Unix-domain socket\n";
    // Refused, but its library's doing: said on stderr, not held against the candidate.
    std::string earlier_v = pkb::rank::take_violation();
    if (!earlier_v.empty()) r += "a thread started before the sandbox was recorded: " + earlier_v + "\n";
    // A thread the candidate starts is the candidate's.
    std::thread later([] { (void)socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0); });
    later.join();
    r += expect_violation("a thread started inside", "socket(AF_UNIX)");
    return r;
  });
  EXPECT_EQ(found, "");
  EXPECT_EQ(accepted(listener), 0);
  close(listener);
}

// ---- the probes, end to end --------------------------------------------------------------

namespace {

// Every attempt a sandboxed probe made was refused; the planted secrets and the places a
// file could be left were among them; no file it tried to write is there.
void expect_all_refused(const std::vector<Attempt>& all, const std::string& home) {
  EXPECT_GT(all.size(), 20u);
  for (auto& a : all) {
    EXPECT_NE(a.outcome, "allowed") << "rank " << a.rank << ": " << a.what << " " << a.target;
    if (a.what == "write") EXPECT_FALSE(fs::exists(a.target)) << a.target;
  }
  for (const std::string& secret : {"/.ssh/id_ed25519", "/.aws/credentials", "/.git-credentials", "/.netrc",
                                    "/.docker/config.json"})
    EXPECT_EQ(outcome(all, "read", home + secret), "denied") << secret;
  EXPECT_EQ(outcome(all, "read", "/etc/shadow"), "denied");
}

}  // namespace

// "probe <label> <n> <target>" lines: a rank's descriptors, or pkb's.
std::vector<std::pair<std::string, std::string>> descriptors(const std::string& echoed, const std::string& label) {
  std::regex line("^\\[rank \\d+\\] probe " + label + " (\\d+) (.*)$");
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(echoed);
  std::smatch m;
  for (std::string l; std::getline(in, l);)
    if (std::regex_match(l, m, line)) out.emplace_back(m[1], m[2]);
  return out;
}

// The native probe tries every place and secret, a Unix socket and pkb itself, and finds
// none; under --no-sandbox the same probe reaches them, so its lines are worth reading.
// A pipe this process leaves open across exec reaches pkb, never a rank.
TEST(Sandbox, AProbeFindsNoWayOut) {
  std::string home = planted_home(), name = "pkb-test-" + std::to_string(getpid()) + "-probe";
  int listener = abstract_listener(name);
  ASSERT_GE(listener, 0);
  int leak[2];
  ASSERT_EQ(pipe(leak), 0);  // no O_CLOEXEC: inherited by pkb
  struct stat leak_st{};
  fstat(leak[1], &leak_st);
  std::string leaked = "pipe:[" + std::to_string(leak_st.st_ino) + "]";
  std::vector<std::pair<std::string, std::string>> env = {
      {"PKB_TEST_HOME", home}, {"PKB_TEST_ABSTRACT", name}, {"OPENAI_API_KEY", "sk-test-not-a-key"}};
  std::vector<std::string> args = {"--echo", "--seed", "4242"};
  Eval e = eval_file("cpu/sandbox_probe.cpp", 2, args, env);
  if (!e.result["sandbox"].value("filesystem", false)) GTEST_SKIP() << "no Landlock in this kernel: " << e.result["sandbox"];
  EXPECT_EQ(e.result["verdict"], "integrity_violation") << e.run.out << e.run.err;
  EXPECT_TRUE(contains(e.result.value("message", ""), "socket(AF_UNIX)")) << e.result["message"];
  auto all = attempts(e.run.err);
  expect_all_refused(all, home);
  int proc_reads = 0;
  for (auto& a : all)
    if (a.what == "read" && a.target.rfind("/proc/", 0) == 0) {
      ++proc_reads;
      EXPECT_EQ(a.outcome, "denied") << a.target;
    }
  EXPECT_EQ(proc_reads, 2 + 2 + 2);  // pkb's environ and cmdline from both ranks, rank 0's from rank 1
  EXPECT_EQ(outcome(all, "socket", "AF_UNIX"), "denied");
  EXPECT_EQ(outcome(all, "connect", "@" + name), "failed");  // no socket to try with
  EXPECT_EQ(accepted(listener), 0);
  EXPECT_TRUE(survivors(e.run.tag).empty());
  auto own = descriptors(e.run.err, "descriptor");
  EXPECT_GE(own.size(), 6u);  // stdin, stdout, stderr and the bootstrap socket, both ranks
  for (auto& [fd, target] : own) {
    EXPECT_NE(target, leaked) << "descriptor " << fd;
    if (fd == "0") EXPECT_EQ(target, "/dev/null");
  }
  EXPECT_TRUE(descriptors(e.run.err, "parent-descriptor").empty());

  // Without the sandbox every one of them is there to be had.
  Eval open = eval_file("cpu/sandbox_probe.cpp", 2, {"--echo", "--seed", "4242", "--no-sandbox"}, env);
  auto seen = attempts(open.run.err);
  for (auto& a : seen)
    if (a.what == "write" && a.outcome == "allowed") fs::remove(a.target);
  EXPECT_EQ(open.result["verdict"], "correct") << open.run.out << open.run.err;
  for (const std::string& secret : {"/.ssh/id_ed25519", "/.aws/credentials", "/.git-credentials", "/.netrc"})
    EXPECT_EQ(outcome(seen, "read", home + secret), "allowed") << secret;
  for (const char* place : {"/dev/shm/", "/tmp/", "/var/tmp/"})
    EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [&](const Attempt& a) {
      return a.what == "write" && a.target.rfind(place, 0) == 0 && a.outcome == "allowed";
    })) << place;
  int environ_read = 0;
  for (auto& a : seen)
    if (a.what == "read" && a.target.find("/environ") != std::string::npos && a.outcome == "allowed") ++environ_read;
  EXPECT_EQ(environ_read, 3);
  EXPECT_EQ(outcome(seen, "socket", "AF_UNIX"), "allowed");
  EXPECT_EQ(outcome(seen, "connect", "@" + name), "allowed");
  EXPECT_EQ(accepted(listener), 2);
  close(listener);
  auto theirs = descriptors(open.run.err, "parent-descriptor");
  EXPECT_TRUE(std::any_of(theirs.begin(), theirs.end(), [&](auto& d) { return d.second == leaked; }))
      << "pkb did not inherit the pipe: the check below would mean nothing";
  for (auto& [fd, target] : descriptors(open.run.err, "descriptor")) EXPECT_NE(target, leaked) << "descriptor " << fd;
  close(leak[0]);
  close(leak[1]);
  for (auto& a : seen)
    if (a.what == "kill" || a.what == "pidfd_open" || a.what == "process_vm_readv")
      EXPECT_EQ(a.outcome, "allowed") << a.what;
}

// What seccomp denies is the verdict, named: a signal to pkb, pkb's memory. What Landlock
// denies alone is not a violation: the probe of files and secrets only is correct.
TEST(Sandbox, ProbesOfSignalsAndMemoryAreViolationsNamed) {
  Eval signal = eval_file("cpu/sandbox_probe.cpp", 2, {"--echo"}, {{"PKB_PROBE", "signal"}});
  if (!signal.result["sandbox"].value("filesystem", false)) GTEST_SKIP() << "no Landlock in this kernel";
  EXPECT_EQ(signal.result["verdict"], "integrity_violation") << signal.run.out << signal.run.err;
  EXPECT_TRUE(contains(signal.result.value("message", ""), "kill(pid ")) << signal.result["message"];
  Eval memory = eval_file("cpu/sandbox_probe.cpp", 2, {"--echo"}, {{"PKB_PROBE", "memory"}});
  EXPECT_EQ(memory.result["verdict"], "integrity_violation") << memory.run.out << memory.run.err;
  EXPECT_TRUE(contains(memory.result.value("message", ""), "process_vm_readv")) << memory.result["message"];
  for (auto& a : attempts(memory.run.err)) EXPECT_EQ(a.outcome, "denied") << a.what;
  Eval quiet = eval_file("cpu/sandbox_probe.cpp", 2, {"--echo"}, {{"PKB_PROBE", "files,secrets"}});
  EXPECT_EQ(quiet.result["verdict"], "correct") << quiet.run.out << quiet.run.err;
  for (auto& a : attempts(quiet.run.err)) EXPECT_NE(a.outcome, "allowed") << a.what << " " << a.target;
}

// The Python probe, in pkb's embedded interpreter: the same places and secrets, and the
// folder that holds every candidate's Triton cache (its own folder, keyed by its source,
// is the only part it may write).
TEST(Sandbox, APythonProbeFindsNoWayOut) {
  std::string home = planted_home(), cache = temp_dir("py-probe-cache");
  std::vector<std::pair<std::string, std::string>> env = {{"PKB_TEST_HOME", home}, {"PKB_CACHE_DIR", cache}};
  Eval e = eval_file("py/sandbox_probe.py", 2, {"--echo"}, env);
  if (contains(e.run.out, "built without embedded Python")) GTEST_SKIP() << "pkb was built without embedded Python";
  if (!e.result["sandbox"].value("filesystem", false)) GTEST_SKIP() << "no Landlock in this kernel";
  EXPECT_EQ(e.result["verdict"], "integrity_violation") << e.run.out << e.run.err;
  EXPECT_TRUE(contains(e.result.value("message", ""), "socket(AF_UNIX)")) << e.result["message"];
  auto all = attempts(e.run.err);
  expect_all_refused(all, home);
  std::smatch m;
  static const std::regex triton(R"(\] probe triton-cache (\S+))");
  ASSERT_TRUE(std::regex_search(e.run.err, m, triton)) << e.run.err;
  std::string own = m[1];
  EXPECT_TRUE(std::regex_match(own, std::regex(cache + "/triton/[0-9a-f]{64}"))) << own;
  EXPECT_TRUE(fs::is_directory(own));
  EXPECT_TRUE(find(all, "write", fs::path(own).parent_path().string() + "/pkb-probe-" + e.run.tag + "-r0-py"));

  Eval open = eval_file("py/sandbox_probe.py", 2, {"--echo", "--no-sandbox"}, env);
  auto seen = attempts(open.run.err);
  for (auto& a : seen)
    if (a.what == "write" && a.outcome == "allowed") fs::remove(a.target);
  EXPECT_EQ(open.result["verdict"], "correct") << open.run.out << open.run.err;
  EXPECT_EQ(outcome(seen, "read", home + "/.aws/credentials"), "allowed");
  EXPECT_EQ(outcome(seen, "socket", "AF_UNIX"), "allowed");
  for (auto& a : seen)
    if (a.what == "kill") EXPECT_EQ(a.outcome, "allowed");
}

// A store-and-replay pair: the first computes and stores its outputs by a hash of its
// input, the second (the same --seed, so the same inputs) only copies them back. Correct
// without the sandbox, which shows the attack is real; wrong in it, where nothing written
// outlives an evaluation. Native (/dev/shm, /tmp) and Python (also its Triton cache folder).
TEST(Sandbox, NothingStoredReachesALaterEvaluation) {
  for (const std::string kind : {"cpu", "py"}) {
    std::string ext = kind == "cpu" ? ".cpp" : ".py", key = "t" + std::to_string(getpid()) + kind;
    std::vector<std::pair<std::string, std::string>> env = {{"PKB_TEST_STORE", key}};
    std::vector<std::string> args = {"--seed", "777", "--size", "M=64,N=64"};
    auto leftovers = [&] {
      int n = 0;
      for (const char* root : {"/dev/shm", "/tmp"}) n += fs::exists(std::string(root) + "/pkb-store-" + key);
      return n;
    };
    Eval store = eval_file(kind + "/store_outputs" + ext, 2, args, env);
    if (contains(store.run.out, "built without embedded Python")) continue;
    if (!store.result["sandbox"].value("filesystem", false)) GTEST_SKIP() << "no Landlock in this kernel";
    EXPECT_EQ(store.result["verdict"], "correct") << kind << store.run.out << store.run.err;
    EXPECT_EQ(leftovers(), 0) << kind;
    Eval replay = eval_file(kind + "/replay_outputs" + ext, 2, args, env);
    EXPECT_EQ(replay.result["verdict"], "wrong") << kind << replay.run.out << replay.run.err;

    args.push_back("--no-sandbox");
    Eval open_store = eval_file(kind + "/store_outputs" + ext, 2, args, env);
    EXPECT_EQ(open_store.result["verdict"], "correct") << kind << open_store.run.out;
    EXPECT_EQ(leftovers(), 2) << kind;
    Eval open_replay = eval_file(kind + "/replay_outputs" + ext, 2, args, env);
    EXPECT_EQ(open_replay.result["verdict"], "correct") << kind << open_replay.run.out << open_replay.run.err;
    for (const char* root : {"/dev/shm", "/tmp"}) fs::remove_all(std::string(root) + "/pkb-store-" + key);
  }
}
