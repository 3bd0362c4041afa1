#include "support.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "launch/cpus.hpp"
#include "launch/subprocess.hpp"
#include "spec/spec.hpp"

namespace pkbtest {

namespace fs = std::filesystem;

pid_t spawn_pkb(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env,
                const posix_spawn_file_actions_t& actions) {
  std::vector<std::string> argv = {PKB_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> envs;
  for (auto& [k, v] : env) envs.push_back(k + "=" + v);
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool replaced = std::any_of(env.begin(), env.end(), [&](auto& p) { return kv.rfind(p.first + "=", 0) == 0; });
    if (!replaced) envs.push_back(kv);
  }
  std::vector<char*> a, e;
  for (auto& x : argv) a.push_back(x.data());
  a.push_back(nullptr);
  for (auto& x : envs) e.push_back(x.data());
  e.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, a.data(), e.data()) != 0)
    throw std::runtime_error("cannot start " + argv[0]);
  return pid;
}

TerminalRun run_pkb_on_terminal(const std::vector<std::string>& args, const std::string& stdout_path,
                                const std::vector<std::pair<std::string, std::string>>& env) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) throw std::runtime_error("no pseudo-terminal");
  std::string terminal = ptsname(master);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, terminal.c_str(), O_RDWR | O_NOCTTY, 0);
  pid_t pid = -1;
  try {
    pid = spawn_pkb(args, env, fa);
  } catch (...) {
    posix_spawn_file_actions_destroy(&fa);
    close(master);
    throw;
  }
  posix_spawn_file_actions_destroy(&fa);
  TerminalRun r;
  char buf[4096];
  for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) r.err.append(buf, static_cast<size_t>(n));  // EIO at the end
  close(master);
  while (waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

PkbRun run_pkb(const std::vector<std::string>& args, double timeout_s,
               const std::vector<std::pair<std::string, std::string>>& env) {
  static int counter = 0;
  PkbRun r;
  r.tag = "t" + std::to_string(getpid()) + "-" + std::to_string(++counter);
  std::vector<std::string> argv = {PKB_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  auto e = env;
  e.push_back({"PKB_TEST_TAG", r.tag});
  auto t0 = std::chrono::steady_clock::now();
  auto p = pkb::launch::run_process(argv, timeout_s, e);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.code = p.timed_out ? -2 : p.exit_code;
  r.out = p.out;
  r.err = p.err;
  return r;
}

std::vector<pid_t> survivors(const std::string& tag, double grace_s) {
  std::string needle = "PKB_TEST_TAG=" + tag;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  for (;;) {
    std::vector<pid_t> found;
    for (auto& d : fs::directory_iterator("/proc")) {
      std::string name = d.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream f(d.path() / "environ", std::ios::binary);
      std::string env((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      for (size_t i = 0; i < env.size();) {
        size_t end = env.find('\0', i);
        if (end == std::string::npos) end = env.size();
        if (env.compare(i, end - i, needle) == 0) found.push_back(std::stoi(name));
        i = end + 1;
      }
    }
    if (found.empty() || std::chrono::steady_clock::now() > deadline) return found;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

namespace {
// One folder per test process, removed when that process exits (not by a forked child) unless
// a test failed, so that runs of the suite do not fill /tmp and a failure can still be looked at.
struct ScratchRoot {
  fs::path path = fs::temp_directory_path() / ("pkb-test-" + std::to_string(getpid()));
  pid_t owner = getpid();
  ~ScratchRoot() {
    if (getpid() != owner) return;
    if (::testing::UnitTest::GetInstance()->Failed()) {
      fprintf(stderr, "pkb tests: scratch kept in %s\n", path.c_str());
      return;
    }
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
}  // namespace

std::string temp_dir(const std::string& name) {
  static ScratchRoot root;
  fs::path p = root.path / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::vector<CaseGroup> group_cases(const std::vector<Case>& cases) {
  std::vector<CaseGroup> out;
  for (auto& c : cases) {
    auto it = std::find_if(out.begin(), out.end(), [&](auto& g) { return g.world == c.world && g.size == c.size; });
    if (it == out.end()) {
      std::string name = "W" + std::to_string(c.world) + (c.size.empty() ? "" : "_" + c.size);
      for (char& ch : name)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      out.push_back({c.world, c.size, {}, name});
      it = out.end() - 1;
    }
    it->problems.push_back(c.problem);
  }
  return out;
}

void PrintTo(const CaseGroup& g, std::ostream* os) {
  *os << "W=" << g.world << (g.size.empty() ? "" : " size " + g.size) << ":";
  for (auto& p : g.problems) *os << " " << p;
}

namespace {

// Smaller sizes where a default is too heavy for the CPU device on 2 cores, with the default's cost.
const std::map<std::string, std::string> kCpuSizes = {
    {"cp_magi_cso_attention", "C4=150,C8=200"},        // 12150-token ranges, ~2 TFLOP a rank: over 5 min a trial
    {"cp_magi_tile_vae_decode", "T=6,H=40,Wd=30"},     // a 720 x 720 x 24 video on every rank
    {"cp_conv2d_halo_exchange", "C=64,Hlat=64,Wd=32"},  // 1280 channels, ~0.25 TFLOP a rank
    {"gnn_feature_fetch_projection", "V0=65536"},      // a 2 GiB table
    {"sci_distributed_irfft2", "H=180,X=360"},         // 20 720 x 1440 planes: 40 s a trial at W = 2
    {"sci_distributed_rfft2", "M=256,N=512"},
    {"sci_spherical_disco_conv", "B=8"},
    {"tp_conv3d_rowparallel_allreduce", "C=128"},      // 10 s a trial
    {"dp_importance_sampling_loss", "M=128,V=4096"},   // the LM-head GEMM
    {"dp_dinov2_knn", "N=256"},
    {"dp_dinov2_sinkhorn_knopp", "Bl=128,K=4096"},
};

}  // namespace

std::vector<std::string> problem_dtype_flags() {
  static const bool native = [] {
    bool yes = pkb::launch::cpu_has_bf16().value_or(true);
    if (!yes)
      std::fprintf(stderr, "pkb tests: this CPU has no bf16 instructions, so the problem tests run at --dtype fp32 "
                           "(their bf16 results are checked where the CPU has them and on GPUs)\n");
    return yes;
  }();
  if (native) return {};
  return {"--dtype", "fp32"};
}

std::vector<CaseGroup> every_problem() {
  std::map<std::pair<int, std::string>, CaseGroup> by;
  std::vector<std::string> files;
  for (auto& f : fs::directory_iterator(std::string(PKB_SOURCE_DIR) + "/problems")) files.push_back(f.path().string());
  std::sort(files.begin(), files.end());
  for (auto& file : files) {
    pkb::spec::ProblemSpec s = pkb::spec::load_spec(file);
    auto it = kCpuSizes.find(s.slug);
    std::string size = it == kCpuSizes.end() ? "" : it->second;
    std::string sized = size.empty() ? "default" : size;
    std::vector<int> worlds;
    if (s.world_size_error(1, sized).empty()) worlds.push_back(1);
    for (int w = 2; w <= 64; ++w)
      if (s.world_size_error(w, sized).empty()) {
        worlds.push_back(w);
        break;
      }
    for (int w : worlds) {
      CaseGroup& g = by[{w, size}];
      g.world = w;
      g.size = size;
      g.problems.push_back(s.slug);
    }
  }
  std::vector<CaseGroup> out;
  for (auto& [key, g] : by) {
    g.name = "W" + std::to_string(g.world) + (g.size.empty() ? "" : "_" + g.problems.front());
    out.push_back(g);
  }
  return out;
}

namespace {

// The check through the server at PKB_CHECK_SOCKET; false where there is none.
bool check_through_server(const std::vector<std::string>& argv, double timeout_s, pkb::launch::ProcessResult& r) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = PKB_CHECK_SOCKET;
  if (path.size() >= sizeof addr.sun_path) return false;
  std::copy(path.begin(), path.end(), addr.sun_path);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(s);
    return false;
  }
  std::string req = nlohmann::json{{"argv", argv}, {"timeout", timeout_s}, {"cwd", fs::current_path().string()}}.dump() + "\n";
  for (size_t sent = 0; sent < req.size();) {
    ssize_t n = send(s, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      close(s);
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s + 30);
  std::string got;
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{s, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      r.timed_out = true;
      break;
    }
    ssize_t n = read(s, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(s);
  // The server's last line: "\n\0pkb-check-exit CODE\n". Without it the check died.
  const std::string mark = std::string("\n") + '\0' + "pkb-check-exit ";
  size_t at = got.rfind(mark);
  r.exit_code = at == std::string::npos ? -1 : std::atoi(got.c_str() + at + mark.size());
  r.out = got.substr(0, at);
  if (at == std::string::npos) r.err = "the check server's child ended without an exit code";
  return true;
}

}  // namespace

pkb::launch::ProcessResult run_python_check(const std::string& script, const std::vector<std::string>& args,
                                            double timeout_s) {
  std::vector<std::string> argv = {std::string(PKB_SOURCE_DIR) + "/tests/" + script};
  argv.insert(argv.end(), args.begin(), args.end());
  pkb::launch::ProcessResult r;
  if (check_through_server(argv, timeout_s, r)) return r;
  argv.insert(argv.begin(), PKB_PYTHON);
  return pkb::launch::run_process(argv, timeout_s, {{"OMP_NUM_THREADS", "1"}});  // as the server's (check_server.py)
}

void expect_references_recomputed(const CaseGroup& g) {
  std::string w = std::to_string(g.world), dir = temp_dir(g.name);
  // W = 1 communicates nothing, so there is nothing for validate to leave out.
  std::vector<std::string> args = {g.world > 1 ? "validate" : "dryrun", "--trials", "2", "--seed", "7340" + w,
                                   "--save-outputs", dir, "--device", "cpu", "-w", w};
  if (!g.size.empty()) args.insert(args.end(), {"--size", g.size});
  for (auto& f : problem_dtype_flags()) args.push_back(f);
  if (g.world == 1) args.push_back("-p");
  args.insert(args.end(), g.problems.begin(), g.problems.end());
  PkbRun r = run_pkb(args);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  if (g.world > 1) {
    std::string n = std::to_string(g.problems.size());
    EXPECT_TRUE(contains(r.out, n + (g.problems.size() == 1 ? " problem, 0 broken" : " problems, 0 broken"))) << r.out;
  } else {
    EXPECT_TRUE(contains(r.out, "ok (")) << r.out;
  }
  EXPECT_TRUE(survivors(r.tag).empty());
  std::string list;
  for (auto& p : g.problems) list += (list.empty() ? "" : ",") + p;
  auto c = run_python_check("check_problem.py", {list, dir, w}, 900);
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
}

void expect_cpu_candidate_correct(const std::string& problem, int world, const std::string& size) {
  std::vector<std::string> args = {"eval", "-p", problem, "-s", std::string(PKB_SOURCE_DIR) + "/solutions_cpu/" + problem + ".cpp",
                                   "--device", "cpu", "-w", std::to_string(world), "--trials", "3", "--warmup", "2",
                                   "--iters", "3"};
  if (!size.empty()) args.insert(args.end(), {"--size", size});
  for (auto& f : problem_dtype_flags()) args.push_back(f);
  PkbRun r = run_pkb(args);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "verdict: correct")) << r.out << r.err;
  EXPECT_TRUE(survivors(r.tag).empty());
}

}  // namespace pkbtest
