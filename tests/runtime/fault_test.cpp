// Ranks that fail: each failure gives the right verdict within its deadline, names the
// rank, the phase and what happened, and leaves no process behind.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace pkbtest;

namespace {

PkbRun run_fault(const std::string& problem, double timeout) {
  return run_pkb({"--problem-dir", std::string(PKB_SOURCE_DIR) + "/tests/faults", "--reference-lib", PKB_TEST_REFS,
                  "dryrun", "-p", problem, "--device", "cpu", "-w", "4", "--trials", "3", "--timeout",
                  std::to_string(timeout)},
                 120);
}

void expect_clean(const PkbRun& r) {
  auto left = survivors(r.tag);
  EXPECT_TRUE(left.empty()) << left.size() << " processes left behind, first pid " << (left.empty() ? 0 : left[0]);
}

}  // namespace

TEST(Faults, SegfaultingRank) {
  PkbRun r = run_fault("test_fault_segv", 30);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_TRUE(contains(r.err, "crash: rank 3 was killed by signal 11 (Segmentation fault) in trial 1")) << r.err;
  EXPECT_LT(r.seconds, 20);
  expect_clean(r);
}

TEST(Faults, AbortingRank) {
  PkbRun r = run_fault("test_fault_abort", 30);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_TRUE(contains(r.err, "crash: rank 3 was killed by signal 6 (Aborted) in trial 1")) << r.err;
  expect_clean(r);
}

TEST(Faults, RankExitingNonZeroShowsItsLastLines) {
  PkbRun r = run_fault("test_fault_exit", 30);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_TRUE(contains(r.err, "crash: rank 3 exited with code 3 in trial 1")) << r.err;
  EXPECT_TRUE(contains(r.err, "| fault: exiting with code 3")) << r.err;
  expect_clean(r);
}

TEST(Faults, RankErrorMessageIsReported) {
  PkbRun r = run_fault("test_fault_throw", 30);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_TRUE(contains(r.err, "rank 3 exited with code 1 in trial 1: fault: simulated device error")) << r.err;
  expect_clean(r);
}

TEST(Faults, RankThatNeverReachesTheCollective) {
  PkbRun r = run_fault("test_fault_skip_collective", 4);
  EXPECT_EQ(r.code, 5) << r.err;
  // Ranks 0-2 wait in trial 1's all-reduce for rank 3, which went on (or finished).
  EXPECT_TRUE(contains(r.err, "timeout: ranks 0,1,2")) << r.err;
  EXPECT_TRUE(contains(r.err, "in trial 1")) << r.err;
  EXPECT_LT(r.seconds, 4 + 10);
  expect_clean(r);
}

TEST(Faults, ReferenceThatChangesItsReadOnlyInputIsNamed) {
  PkbRun r = run_fault("test_fault_mutate_input", 30);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_TRUE(contains(r.err, "rank 3 exited with code 1 in trial 1: the reference changed its read-only input 'x'"))
      << r.err;
  expect_clean(r);
}

TEST(Faults, RankOfSeveralProblemsNamesTheOneThatFailed) {
  PkbRun r = run_pkb({"--problem-dir", std::string(PKB_SOURCE_DIR) + "/tests/faults", "--reference-lib", PKB_TEST_REFS,
                      "dryrun", "-p", "test_fault_mutate_input", "test_fault_throw", "--device", "cpu", "-w", "4",
                      "--trials", "3", "--timeout", "30"},
                     120);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_TRUE(contains(r.err, "rank 3 exited with code 1 in trial 1 of test_fault_mutate_input: the reference changed")) << r.err;
  expect_clean(r);
}

// A crash in one problem of a grouped eval ends the start of the ranks, but the problems that
// finished before it keep their verdicts (each rank sends a problem's report as it ends).
TEST(Faults, GroupedEvalKeepsTheProblemsFinishedBeforeACrash) {
  std::string out = temp_dir("fault-group") + "/r.jsonl";
  PkbRun r = run_pkb({"--problem-dir", std::string(PKB_SOURCE_DIR) + "/tests/faults", "--reference-lib", PKB_TEST_REFS,
                      "eval", "-p", "test_fault_none", "test_fault_segv", "-s", "@reference", "--device", "cpu", "-w",
                      "2", "--trials", "3", "--timeout", "30", "--json", out},
                     120);
  EXPECT_EQ(r.code, 4) << r.err;
  std::ifstream in(out);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u) << r.out << r.err;
  EXPECT_EQ(lines[0]["problem"], "test_fault_none");
  EXPECT_EQ(lines[0]["verdict"], "correct") << lines[0].dump();
  EXPECT_TRUE(lines[0]["speedup"].is_number());
  EXPECT_EQ(lines[1]["problem"], "test_fault_segv");
  EXPECT_EQ(lines[1]["verdict"], "crash");
  EXPECT_TRUE(contains(r.err, "killed by signal 11 (Segmentation fault) in trial 1 of test_fault_segv")) << r.err;
  expect_clean(r);
}

TEST(Faults, RankThatHangsInInit) {
  PkbRun r = run_fault("test_fault_hang_init", 3);
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_TRUE(contains(r.err, "timeout: rank 3 spent over 3 s in init")) << r.err;
  EXPECT_LT(r.seconds, 3 + 10);
  expect_clean(r);
}

namespace {

// pkb's fork server among this test process's runs (their PKB_TEST_TAG starts "t<pid>-"),
// or 0.
pid_t fork_server_of_this_test() {
  const std::string tag = "PKB_TEST_TAG=t" + std::to_string(getpid()) + "-";
  for (auto& d : std::filesystem::directory_iterator("/proc")) {
    std::string name = d.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream c(d.path() / "cmdline", std::ios::binary), e(d.path() / "environ", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(c)), {}), env((std::istreambuf_iterator<char>(e)), {});
    if (cmd.find(std::string("\0__fork_server", 15)) != std::string::npos && env.find(tag) != std::string::npos)
      return static_cast<pid_t>(std::stol(name));
  }
  return 0;
}

}  // namespace

// The ranks are forked from pkb's fork server. Killed while they run (rank 3 hangs in its
// setup, the others wait for it), the ranks go with it, and pkb says so at once: a crash,
// long before the phase's deadline, nothing left behind.
TEST(Faults, TheForkServerKilledMidRunEndsTheRunAsACrash) {
  pid_t killed = 0;
  std::thread killer([&] {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!killed && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (pid_t p = fork_server_of_this_test()) {
        std::this_thread::sleep_for(std::chrono::seconds(2));  // the ranks are up, rank 3 hangs
        kill(p, SIGKILL);
        killed = p;
      }
    }
  });
  PkbRun r = run_fault("test_fault_hang_init", 60);
  killer.join();
  ASSERT_NE(killed, 0) << "no fork server seen: " << r.err;
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_TRUE(contains(r.err, "crash: pkb's fork server ended while the ranks ran")) << r.err;
  EXPECT_LT(r.seconds, 30);
  expect_clean(r);
}
