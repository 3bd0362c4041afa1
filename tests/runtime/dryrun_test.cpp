// pkb dryrun --solution reference for every collective at W = 1, 2, 4 and 8 on the CPU
// device, through gloo and (W = 2 and 4) pkb's shared-memory communicator; the saved
// rank_*.pt load in Python torch and hold what the problem says.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <sys/wait.h>
#include <unistd.h>

#include "launch/subprocess.hpp"
#include "support.hpp"

using namespace pkbtest;

// All eight collectives at one W and communicator, in turn on one set of ranks (pkb dryrun
// with several problems saves each in <slug>/), checked by one Python process.
class Dryrun : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

const char* const kCollectives[] = {"coll_allreduce", "coll_allgather", "coll_broadcast", "coll_reduce",
                                    "coll_scatter",   "coll_gather",    "coll_reducescatter", "coll_alltoall"};

TEST_P(Dryrun, SavedOutputsHoldWhatTheProblemsSay) {
  auto [world, comm] = GetParam();
  std::string dir = temp_dir("coll-" + std::to_string(world) + comm), list;
  std::vector<std::string> args = {"dryrun", "--solution", "reference", "--device", "cpu", "-w", std::to_string(world),
                                   "--trials", "2", "--ref-comm", comm, "--save-outputs", dir, "-p"};
  for (const char* p : kCollectives) {
    args.push_back(p);
    list += (list.empty() ? "" : ",") + std::string(p);
  }
  PkbRun r = run_pkb(args);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "pkb dryrun 8 problems")) << r.out;
  EXPECT_TRUE(contains(r.out, "ok (")) << r.out;
  EXPECT_TRUE(contains(r.out, "comm=" + comm)) << r.out;
  for (const char* p : kCollectives) EXPECT_TRUE(std::filesystem::exists(dir + "/" + p + "/rank_0.pt")) << p;
  auto check = run_python_check("check_dryrun.py", {list, dir, std::to_string(world)}, 300);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_TRUE(survivors(r.tag).empty());
}

std::string dryrun_name(const ::testing::TestParamInfo<std::tuple<int, std::string>>& info) {
  std::string comm = std::get<1>(info.param);
  return "W" + std::to_string(std::get<0>(info.param)) + (comm == "gloo" ? "" : "_" + comm);
}
INSTANTIATE_TEST_SUITE_P(Collectives, Dryrun, ::testing::Combine(::testing::Values(1, 2, 4, 8), ::testing::Values("gloo")),
                         dryrun_name);
INSTANTIATE_TEST_SUITE_P(CollectivesShm, Dryrun, ::testing::Combine(::testing::Values(2, 4), ::testing::Values("shm")),
                         dryrun_name);

// One problem of several that fails names itself: a W that does not fit one of them is
// refused before any rank starts, naming it.
TEST(Dryrun, SeveralProblemsRefuseAWorldSizeOneOfThemDoesNotTake) {
  PkbRun r = run_pkb({"dryrun", "--device", "cpu", "-w", "2", "-p", "coll_allreduce", "ep_moe_narrow"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "W=2 does not fit ep_moe_narrow")) << r.err;
}

// A category runs the problems the world size fits and says which it left out.
TEST(Dryrun, CategoryLeavesOutTheProblemsTheWorldSizeDoesNotFit) {
  PkbRun r = run_pkb({"dryrun", "--device", "cpu", "-w", "2", "-p", "coll", "ep_moe_narrow"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "ep_moe_narrow")) << r.out;
  EXPECT_TRUE(contains(r.out, "skipped: ep_moe_narrow needs W == 1 || E > 1")) << r.out;
  EXPECT_TRUE(contains(r.out, "pkb dryrun 8 problems")) << r.out;
  // validate likewise, and counts what it left out
  PkbRun v = run_pkb({"validate", "--device", "cpu", "-w", "2", "--trials", "1", "coll", "ep_moe_narrow"});
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_TRUE(contains(v.out, "skipped: ep_moe_narrow needs W == 1 || E > 1")) << v.out;
  EXPECT_TRUE(contains(v.out, "8 problems, 0 broken, 1 skipped")) << v.out;
}

TEST(DryrunIds, AcceptsOriginalIdAndStem) {
  for (std::string key : {"7", "7_reducescatter", "coll_reducescatter"}) {
    PkbRun r = run_pkb({"dryrun", "-p", key, "--device", "cpu", "-w", "2"});
    EXPECT_EQ(r.code, 0) << key << r.err;
    EXPECT_TRUE(contains(r.out, "coll_reducescatter")) << r.out;
  }
}

// The saved outputs above are hundreds of MB a test: the test process's scratch goes when it
// ends (a suite that kept it once filled /tmp with 60 GB), and stays where a test failed.
// A pkb killed outright (SIGKILL) leaves its ranks' scratch folder: the next group pkb
// starts removes it, and only it (the folders of a pkb still running stay).
TEST(Scratch, AKilledPkbsFolderGoesWithTheNextGroup) {
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  waitpid(gone, nullptr, 0);
  auto tmp = std::filesystem::temp_directory_path();
  auto stale = tmp / ("pkb-scratch-" + std::to_string(gone) + "-killed");
  auto live = tmp / ("pkb-scratch-" + std::to_string(getpid()) + "-running");
  for (auto& d : {stale, live}) {
    std::filesystem::create_directories(d / "home");
    std::ofstream(d / "home" / "left.txt") << "x";
  }
  PkbRun r = run_pkb({"dryrun", "-p", "coll_allreduce", "--device", "cpu", "-w", "1"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(stale)) << stale;
  EXPECT_TRUE(std::filesystem::exists(live / "home" / "left.txt")) << live;
  std::filesystem::remove_all(stale);
  std::filesystem::remove_all(live);
}

TEST(Scratch, GoesWithTheTestProcessThatPassed) {
  if (std::getenv("PKB_SCRATCH_CHILD")) {
    std::string dir = temp_dir("kept-until-exit");
    std::ofstream(dir + "/rank_0.pt") << "bytes";
    printf("scratch=%s\n", dir.c_str());
    if (std::string(std::getenv("PKB_SCRATCH_CHILD")) == "fail") ADD_FAILURE() << "asked to fail";
    return;
  }
  for (std::string how : {"pass", "fail"}) {
    auto p = pkb::launch::run_process({"/proc/self/exe", "--gtest_filter=Scratch.GoesWithTheTestProcessThatPassed"}, 60,
                                      {{"PKB_SCRATCH_CHILD", how}});
    size_t at = p.out.find("scratch=");
    ASSERT_NE(at, std::string::npos) << p.out << p.err;
    std::string dir = p.out.substr(at + 8, p.out.find('\n', at) - at - 8);
    std::filesystem::path root = std::filesystem::path(dir).parent_path();
    EXPECT_EQ(p.exit_code, how == "pass" ? 0 : 1) << p.out;
    EXPECT_EQ(std::filesystem::exists(root), how == "fail") << how << ": " << root;
    if (how == "fail") {
      EXPECT_TRUE(contains(p.err + p.out, "scratch kept in " + root.string())) << p.err;
      std::filesystem::remove_all(root);
    }
  }
}
