// The parent's parts that need no rank: the bootstrap store over its frames, what reaches a
// rank's environment, a rank's job as JSON, the phases' deadlines, the process-table scans.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <thread>

#include "launch/environment.hpp"
#include "launch/fork_server.hpp"
#include "launch/phases.hpp"
#include "launch/placement.hpp"
#include "launch/procfs.hpp"
#include "launch/spawn.hpp"
#include "launch/stopped.hpp"
#include "launch/store.hpp"
#include "rank/job.hpp"

using namespace pkb::launch;

namespace {

Frame packed(Op op, std::vector<std::string> parts) { return Frame{op, pack(parts), -1}; }
Frame frame(Op op, std::string payload) { return Frame{op, std::move(payload), -1}; }

bool has(const std::vector<std::string>& env, const std::string& kv) {
  return std::find(env.begin(), env.end(), kv) != env.end();
}

bool has_name(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(), [&](const std::string& kv) { return kv.rfind(name + "=", 0) == 0; });
}

}  // namespace

TEST(Store, GetWaitsForTheKeyAndSetAnswersEveryWaiter) {
  Store s;
  EXPECT_TRUE(s.handle(0, frame(Op::Get, "id")).empty());  // rank 0 waits
  EXPECT_TRUE(s.handle(2, frame(Op::Get, "id")).empty());  // rank 2 too
  EXPECT_EQ(s.waiting(), 2u);
  auto replies = s.handle(1, packed(Op::Set, {"id", "nccl-unique-id"}));
  ASSERT_EQ(replies.size(), 3u);  // Ok to the setter, the value to both waiters
  EXPECT_EQ(replies[0].rank, 1);
  EXPECT_EQ(replies[0].frame.op, Op::Ok);
  for (int k : {1, 2}) {
    EXPECT_EQ(replies[k].frame.op, Op::Value);
    EXPECT_EQ(replies[k].frame.payload, "nccl-unique-id");
  }
  EXPECT_EQ(replies[1].rank + replies[2].rank, 2);
  EXPECT_EQ(s.waiting(), 0u);
  auto now = s.handle(3, frame(Op::Get, "id"));  // already there: answered at once
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].frame.payload, "nccl-unique-id");
}

TEST(Store, AddCheckDeleteAndCount) {
  Store s;
  EXPECT_EQ(s.handle(0, packed(Op::Add, {"n", "5"}))[0].frame.payload, "5");
  EXPECT_EQ(s.handle(1, packed(Op::Add, {"n", "-2"}))[0].frame.payload, "3");
  EXPECT_EQ(s.handle(0, packed(Op::Check, {"n"}))[0].frame.payload, "1");
  EXPECT_EQ(s.handle(0, packed(Op::Check, {"n", "missing"}))[0].frame.payload, "0");
  EXPECT_EQ(s.handle(0, frame(Op::NumKeys, ""))[0].frame.payload, "1");
  EXPECT_EQ(s.handle(0, frame(Op::Delete, "n"))[0].frame.payload, "1");
  EXPECT_EQ(s.handle(0, frame(Op::Delete, "n"))[0].frame.payload, "0");
  EXPECT_FALSE(Store::handles(Op::Phase));
  EXPECT_TRUE(Store::handles(Op::GetFd));
}

TEST(Store, DescriptorsWaitLikeValuesAndStayOwned) {
  Store s;
  EXPECT_TRUE(s.handle(1, frame(Op::GetFd, "heap/0")).empty());
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  close(p[1]);
  auto replies = s.handle(0, Frame{Op::SetFd, "heap/0", p[0]});
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[1].rank, 1);
  EXPECT_EQ(replies[1].frame.fd, p[0]);  // sent along; the store closes it when it goes
}

TEST(Environment, RanksGetAnAllowListNeverSecrets) {
  std::vector<std::string> parent = {"PATH=/usr/bin", "LD_LIBRARY_PATH=/opt/lib", "NCCL_DEBUG=INFO",
                                     "CUDA_VISIBLE_DEVICES=0,1", "PKB_TEST_TAG=t1", "OPENAI_API_KEY=sk-x",
                                     "HF_TOKEN=hf", "PKB_OPENAI_API_KEY=k", "GITHUB_PAT=p", "SSH_AUTH_SOCK=/s",
                                     "HOME=/home/u", "DB_PASSWORD=x", "TOGETHER_PROVIDER=t",
                                     "TRITON_CACHE_DIR=/home/u/.triton/cache"};
  EnvPolicy policy;
  policy.scratch = "/tmp/pkb-scratch-1";
  policy.deny = {"TOGETHER_PROVIDER"};  // a models.toml key variable, whatever its name
  auto env = rank_environment(parent, policy, {{"PKB_RANK", "3"}, {"NCCL_NVLS_ENABLE", "0"}});
  for (auto kv : {"PATH=/usr/bin", "LD_LIBRARY_PATH=/opt/lib", "NCCL_DEBUG=INFO", "CUDA_VISIBLE_DEVICES=0,1",
                  "PKB_TEST_TAG=t1", "PKB_RANK=3", "NCCL_NVLS_ENABLE=0", "HOME=/tmp/pkb-scratch-1",
                  "TMPDIR=/tmp/pkb-scratch-1", "PKB_SCRATCH=/tmp/pkb-scratch-1",
                  "TRITON_CACHE_DIR=/tmp/pkb-scratch-1/triton-cache"})
    EXPECT_TRUE(has(env, kv)) << kv;
  // The user's Triton cache, shared by every candidate, never; a folder pkb names, yes.
  EXPECT_TRUE(has(rank_environment(parent, policy, {{"TRITON_CACHE_DIR", "/c/triton/ab12"}}),
                  "TRITON_CACHE_DIR=/c/triton/ab12"));
  for (auto name : {"OPENAI_API_KEY", "HF_TOKEN", "PKB_OPENAI_API_KEY", "GITHUB_PAT", "SSH_AUTH_SOCK",
                    "DB_PASSWORD", "TOGETHER_PROVIDER"})
    EXPECT_FALSE(has_name(env, name)) << name;
  policy.pass = {"HF_TOKEN"};
  EXPECT_TRUE(has(rank_environment(parent, policy, {}), "HF_TOKEN=hf"));
  policy.isolate = false;
  policy.scratch.clear();
  auto open = rank_environment(parent, policy, {});
  EXPECT_TRUE(has(open, "OPENAI_API_KEY=sk-x"));
  EXPECT_TRUE(has(open, "HOME=/home/u"));
  EXPECT_TRUE(is_secret_name("my_api_Key"));
  EXPECT_FALSE(is_secret_name("NCCL_SOCKET_IFNAME"));
}

TEST(Job, RoundTripsThroughJsonWithItsDefaultsAndA64BitSeed) {
  pkb::rank::Job j;
  j.mode = "eval";
  j.seed = 18446744073709551557ull;  // above 2^53: a JSON number would lose it
  j.iters = 7;
  j.reference_libs = {"/a.so"};
  pkb::rank::Job back = pkb::rank::job_from_json(nlohmann::json::parse(pkb::rank::to_json(j).dump()));
  EXPECT_EQ(back.seed, j.seed);
  EXPECT_EQ(back.iters, 7);
  EXPECT_EQ(back.warmup, 500);  // the default, stated once
  EXPECT_EQ(back.reference_libs, j.reference_libs);
  EXPECT_TRUE(back.sandbox);
  EXPECT_EQ(pkb::rank::job_from_json(nlohmann::json::object()).trials, 100);
}

// A fork server that does not come up says why, within its deadline; the group then execs
// each rank (GroupReport::fork_server_failed, the record's run.fork_server_failed).
TEST(ForkServer, ThatNeverServesSaysWhyWithinItsDeadline) {
  Limits none;
  none.apply = false;
  auto t0 = std::chrono::steady_clock::now();
  ForkServer slow({"/bin/sleep", "2"}, {}, none, 0, 1);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(slow.ok());
  EXPECT_EQ(slow.why_not(), "it was not ready within 1 s");
  EXPECT_GE(waited, 1);
  EXPECT_LT(waited, 10);  // its deadline, not the default minute (loose: a loaded box)
  ForkServer gone({"/bin/true"}, {}, none, 0, 60);
  EXPECT_FALSE(gone.ok());
  EXPECT_EQ(gone.why_not(), "it exited before it was ready");
}

TEST(Placement, PhaseBudgetsScaleWithDeviceSizeAndOverride) {
  Placement cpu;
  cpu.device = pkb::launch::Device::cpu;
  auto b = phase_budgets(nullptr, "default", cpu, 0);
  EXPECT_EQ(b.at(phase::kTrial), 120);  // 60 s, doubled on the CPU device
  EXPECT_EQ(b.at(phase::kCandidateTiming), 1200);
  EXPECT_EQ(phase_budgets(nullptr, "large", cpu, 0).at(phase::kTrial), 480);
  auto o = phase_budgets(nullptr, "default", cpu, 5);
  EXPECT_EQ(o.at(phase::kTrial), 5);
  EXPECT_EQ(o.at(phase::kBootstrap), 120);  // starting ranks is never cut short
  EXPECT_EQ(o.at(phase::kInterpreter), 300);  // nor starting a .py candidate's Python and torch
  EXPECT_EQ(o.at(phase::kTimingChecks), 1200);  // nor the judges' checks of the timed calls
  EXPECT_EQ(o.at(phase::kCandidateTiming), 5);
}

// Two CPUs a rank, none shared, near each rank's GPU first and highest first; none pinned
// where they (and the spare) do not fit.
TEST(Placement, TimedThreadsGetTwoCpusARankNearTheirGpu) {
  using pkb::launch::plan_cpus;
  std::vector<int> sixteen(16);
  for (int c = 0; c < 16; ++c) sixteen[c] = c;
  auto one = plan_cpus(1, sixteen, {}, 1);
  ASSERT_TRUE(one.pinned());
  EXPECT_EQ(one.timing, std::vector<int>({15}));
  EXPECT_EQ(one.partner, std::vector<int>({14}));
  // Two GPUs, one on each half of the machine; rank 1's near CPUs partly taken already.
  auto two = plan_cpus(3, sixteen, {{0, 1, 2, 3}, {0, 1, 2, 3}, {8}}, 1);
  EXPECT_EQ(two.timing, std::vector<int>({3, 1, 8}));
  EXPECT_EQ(two.partner, std::vector<int>({2, 0, 15}));
  EXPECT_EQ(two.to_json()["timing"], nlohmann::json({3, 1, 8}));
  // Near CPUs outside the allowed set are not taken.
  EXPECT_EQ(plan_cpus(1, {4, 5, 6}, {{0, 1}}, 1).timing, std::vector<int>({6}));
  auto tight = plan_cpus(2, {0, 1, 2, 3}, {}, 1);
  EXPECT_FALSE(tight.pinned());
  EXPECT_EQ(tight.why_not, "4 CPU(s) allowed, 5 needed (two a rank and 1 for the rest)");
  EXPECT_EQ(tight.to_json()["pinned"], false);
  EXPECT_TRUE(plan_cpus(2, {0, 1, 2, 3}, {}, 0).pinned());
  // Hardware threads: CPU c and c + 4 share a core. A partner never on its timing CPU's
  // sibling while a core of its own is left; once none is, siblings after all.
  std::map<int, std::vector<int>> smt;
  for (int c = 0; c < 4; ++c) smt[c] = smt[c + 4] = {c, c + 4};
  auto ht = plan_cpus(2, {0, 1, 2, 3, 4, 5, 6, 7}, {}, 1, smt);
  EXPECT_EQ(ht.timing, std::vector<int>({7, 5}));  // cores 3 and 1
  EXPECT_EQ(ht.partner, std::vector<int>({6, 4}));  // cores 2 and 0: 3 and 2, the siblings of 7 and 6, stay free
  auto three = plan_cpus(3, {0, 1, 2, 3, 4, 5, 6, 7}, {}, 1, smt);
  EXPECT_EQ(three.timing, std::vector<int>({7, 5, 3}));
  EXPECT_EQ(three.partner, std::vector<int>({6, 4, 2}));
  // This machine's own topology reads as lists that hold the CPU itself.
  for (auto& [cpu, sibs] : pkb::launch::smt_siblings(pkb::launch::allowed_cpus()))
    EXPECT_NE(std::find(sibs.begin(), sibs.end(), cpu), sibs.end()) << cpu;
}

TEST(Placement, CpuListsParseAsTheKernelWritesThem) {
  using pkb::launch::parse_cpu_list;
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), std::vector<int>({0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5"), std::vector<int>({5}));
  EXPECT_TRUE(parse_cpu_list("").empty());
  EXPECT_THROW(parse_cpu_list("3-1"), std::invalid_argument);
  EXPECT_THROW(parse_cpu_list("a"), std::invalid_argument);
  EXPECT_THROW(parse_cpu_list("0-99999999999"), std::invalid_argument);  // not a CPU id, nor ten billion of them
  EXPECT_TRUE(pkb::launch::cpus_near_pci("0000:ff:1f.7-no-such-device").empty());
  auto mine = pkb::launch::allowed_cpus();
  EXPECT_FALSE(mine.empty());
}

// The scans read /proc files of processes that may be reaped between the open and the
// read (seen in CI: a Python candidate's short-lived compiler runs ended pkb with
// "basic_filebuf::underflow error reading the file: No such process").
TEST(ProcessTable, ScansSurviveProcessesThatComeAndGo) {
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    while (!stop) {
      pid_t p = fork();
      if (p == 0) _exit(0);
      if (p > 0) waitpid(p, nullptr, 0);
    }
  });
  int scans = 0;
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2); std::chrono::steady_clock::now() < end;
       ++scans) {
    EXPECT_NO_THROW(children_of_self());
    EXPECT_NO_THROW(user_processes());
  }
  stop = true;
  churn.join();
  EXPECT_GT(scans, 10);
}

// A process held still: every thread stopped while the object lives (a spinning one too),
// running again after; a process that is not there cannot be held.
TEST(Stopped, HoldsAProcessStillAndLetsItGo) {
  pid_t child = fork();
  if (child == 0) {
    std::thread spin([] {
      for (volatile long i = 0;; ++i) {
      }
    });
    for (volatile long i = 0;; ++i) {
    }
  }
  ASSERT_GT(child, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  {
    Stopped held(child);
    EXPECT_TRUE(held.ok());
    EXPECT_EQ(process_state(child), 'T');
  }
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (process_state(child) == 'T' && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_NE(process_state(child), 'T');
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(Stopped(child).ok());  // reaped: no such process
  EXPECT_FALSE(Stopped(0).ok());
}

// Each thread's scheduler times, read from outside: a thread that spun shows its time on a
// CPU, one that slept shows little; a process that is not there has no threads.
TEST(ThreadTimes, SayWhatEachThreadOfAProcessDid) {
  std::atomic<pid_t> spinner{0};
  std::atomic<bool> spun{false}, stop{false};
  std::thread spin([&] {
    spinner = static_cast<pid_t>(gettid());
    // 60 ms of this thread's own CPU time: a spin timed by the wall clock gets less of the
    // CPU where the box is busy (36 ms of 60 under a loaded ctest -j2).
    timespec cpu{};
    do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    while (cpu.tv_sec == 0 && cpu.tv_nsec < 60'000'000);
    spun = true;
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::thread sleeper([&] {
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!spun) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::map<pid_t, ThreadTimes> t = thread_times(getpid());
  stop = true;
  spin.join();
  sleeper.join();
  ASSERT_TRUE(t.count(getpid()));  // the main thread's id is the process's
  ASSERT_TRUE(t.count(spinner.load()));
  EXPECT_GE(t[spinner].run_ns, 60'000'000);  // schedstat counts what the thread clock does
  EXPECT_GE(t.size(), 3u);
  EXPECT_TRUE(thread_times(0).empty());
}
