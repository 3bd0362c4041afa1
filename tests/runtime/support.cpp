#include "support.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "launch/subprocess.hpp"

namespace pkbtest {

namespace fs = std::filesystem;

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

void expect_reference_recomputed(const std::string& problem, int world, const std::string& size) {
  std::string w = std::to_string(world), dir = temp_dir(problem + "-" + w);
  std::vector<std::string> placed = {"--device", "cpu", "-w", w};
  if (!size.empty()) placed.insert(placed.end(), {"--size", size});
  std::vector<std::string> dryrun = {"dryrun", "--problem", problem, "--trials", "2", "--seed", "7340" + w,
                                     "--save-outputs", dir};
  dryrun.insert(dryrun.end(), placed.begin(), placed.end());
  PkbRun r = run_pkb(dryrun);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "ok (")) << r.out;
  EXPECT_TRUE(survivors(r.tag).empty());
  auto c = pkb::launch::run_process(
      {PKB_PYTHON, std::string(PKB_SOURCE_DIR) + "/tests/check_problem.py", problem, dir, w}, 600);
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  if (world == 1) return;  // nothing is communicated to leave out
  // pkb validate at the same W and size: zeros, the inputs passed through and the reference
  // without communication must all fail the problem's comparison.
  std::vector<std::string> validate = {"validate", problem, "--trials", "2"};
  validate.insert(validate.end(), placed.begin(), placed.end());
  PkbRun v = run_pkb(validate);
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_TRUE(contains(v.out, "1 problem, 0 broken")) << v.out;
}

void expect_cpu_candidate_correct(const std::string& problem, int world, const std::string& size) {
  std::vector<std::string> args = {"eval", "-p", problem, "-s", std::string(PKB_SOURCE_DIR) + "/solutions_cpu/" + problem + ".cpp",
                                   "--device", "cpu", "-w", std::to_string(world), "--trials", "3", "--warmup", "2",
                                   "--iters", "3"};
  if (!size.empty()) args.insert(args.end(), {"--size", size});
  PkbRun r = run_pkb(args);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "verdict: correct")) << r.out << r.err;
  EXPECT_TRUE(survivors(r.tag).empty());
}

}  // namespace pkbtest
