// Bad input gets one clear error line and a non-zero exit; the registry commands work.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support.hpp"

using namespace pkbtest;

TEST(Cli, UnknownProblem) {
  PkbRun r = run_pkb({"dryrun", "-p", "allreduc", "--device", "cpu"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: unknown problem 'allreduc'; did you mean coll_allreduce")) << r.err;
}

TEST(Cli, MalformedSpecInAProblemFolder) {
  std::string dir = temp_dir("badspec");
  std::ofstream(dir + "/coll_broken.toml") << "slug = \"coll_broken\"\nid = 77\n[sizes\n";
  PkbRun r = run_pkb({"--problem-dir", dir, "list"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "coll_broken.toml:3: malformed TOML")) << r.err;
}

TEST(Cli, WorldSizeOutsideTheConstraints) {
  PkbRun r = run_pkb({"dryrun", "-p", "coll_allreduce", "--device", "cpu", "-w", "65"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "runs with 1 to 64 ranks, not 65")) << r.err;
}

TEST(Cli, BadOptionValues) {
  EXPECT_EQ(run_pkb({"dryrun", "-p", "1", "--device", "tpu"}).code, 2);
  PkbRun r = run_pkb({"dryrun", "-p", "1", "--device", "cpu", "--dtype", "float"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "unknown --dtype 'float'")) << r.err;
  r = run_pkb({"dryrun", "-p", "1", "--device", "cpu", "--size", "huge"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "no size 'huge'")) << r.err;
}

// A mistyped flag or command gets one line naming the nearest one.
TEST(Cli, UnknownFlagsAndCommandsGetASuggestion) {
  PkbRun r = run_pkb({"eval", "-p", "coll_allreduce", "-s", "x.cpp", "--trial", "3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "pkb: error: unknown flag --trial for pkb eval; did you mean --trials?\n");
  r = run_pkb({"sweep", "--solutions", "s", "--out", "o.jsonl", "--world-sizes=4"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "unknown flag --world-sizes for pkb sweep; did you mean --world-size?")) << r.err;
  r = run_pkb({"eval", "-p", "1", "-s", "x.cpp", "--frobnicate"});
  EXPECT_TRUE(contains(r.err, "unknown flag --frobnicate for pkb eval; pkb eval --help lists them")) << r.err;
  r = run_pkb({"--root", PKB_SOURCE_DIR, "evl", "-p", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: unknown command 'evl' (did you mean eval?); the commands are list, show"))
      << r.err;
  r = run_pkb({"report", "--md"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
}

TEST(Cli, ListAndShow) {
  PkbRun r = run_pkb({"list", "--category", "coll"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "coll_alltoall")) << r.out;
  EXPECT_TRUE(contains(r.out, "8 problems")) << r.out;
  r = run_pkb({"show", "14_gemm_allgather"});
  if (r.code == 0) EXPECT_TRUE(contains(r.out, "tp_gemm_allgather"));
  r = run_pkb({"show", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "slug = \"coll_broadcast\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "PKB_REFERENCE(\"coll_broadcast\"")) << r.out;
}

TEST(Cli, SharedMemoryCommunicatorTakesUpTo64Ranks) {
  PkbRun r = run_pkb({"dryrun", "-p", "coll_allreduce", "--device", "cpu", "-w", "65", "--ref-comm", "shm"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "--ref-comm shm takes up to 64 ranks, not 65; use --ref-comm gloo")) << r.err;
}

TEST(Cli, SelftestOnTheCpuDevice) {
  PkbRun r = run_pkb({"selftest", "--device", "cpu", "-w", "4", "--barrier-iters", "200"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "comm=gloo")) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 7) << r.out;  // header, column names, 4 ranks, ok
}

TEST(Cli, NoCommunicationDryrunStillRuns) {
  PkbRun r = run_pkb({"dryrun", "-p", "coll_allreduce", "--device", "cpu", "-w", "4", "--no-comm"});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(Cli, SizesReplacedOnTheCommandLine) {
  PkbRun r = run_pkb({"dryrun", "-p", "coll_allgather", "--device", "cpu", "-w", "2", "-n", "1", "--size",
                      "large:M=24,N=40"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "bf16[2,24,40]")) << r.out;
  r = run_pkb({"dryrun", "-p", "coll_allgather", "--device", "cpu", "-w", "2", "--size", "Q=3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: coll_allgather: 'Q=3' in size 'Q=3' must be NAME=VALUE with NAME one of M, N"))
      << r.err;
  r = run_pkb({"dryrun", "-p", "tp_allgather_gemm", "--device", "cpu", "-w", "4", "--size", "K=1001"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "needs K % W == 0, which fails at W=4 with sizes 'K=1001'; pick another --world-size or --size"))
      << r.err;
}

// pkb doctor says which sandbox layers this kernel offers, in words and in JSON.
TEST(Cli, DoctorReportsTheSandboxLayers) {
  PkbRun r = run_pkb({"doctor"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "sandbox: environment allow-list")) << r.out;
  EXPECT_TRUE(contains(r.out, "processes (seccomp): yes")) << r.out;
  PkbRun j = run_pkb({"doctor", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_TRUE(contains(j.out, "\"landlock_abi\"")) << j.out;
}
