// pkb dryrun --solution reference for every collective at W = 1, 2, 4 and 8 on the CPU
// device, through gloo and (W = 2 and 4) pkb's shared-memory communicator; the saved
// rank_*.pt load in Python torch and hold what the problem says.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "launch/subprocess.hpp"
#include "support.hpp"

using namespace pkbtest;

class Dryrun : public ::testing::TestWithParam<std::tuple<std::string, int, std::string>> {};

TEST_P(Dryrun, SavedOutputsHoldWhatTheProblemSays) {
  auto [problem, world, comm] = GetParam();
  std::string dir = temp_dir(problem + "-" + std::to_string(world) + comm);
  PkbRun r = run_pkb({"dryrun", "--problem", problem, "--solution", "reference", "--device", "cpu", "-w",
                      std::to_string(world), "--trials", "2", "--ref-comm", comm, "--save-outputs", dir});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "ok (")) << r.out;
  EXPECT_TRUE(contains(r.out, "comm=" + comm)) << r.out;
  auto check = pkb::launch::run_process(
      {PKB_PYTHON, std::string(PKB_SOURCE_DIR) + "/tests/check_dryrun.py", problem, dir, std::to_string(world)}, 300);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_TRUE(survivors(r.tag).empty());
}

const auto kCollectives = ::testing::Values("coll_allreduce", "coll_allgather", "coll_broadcast", "coll_reduce",
                                            "coll_scatter", "coll_gather", "coll_reducescatter", "coll_alltoall");
std::string dryrun_name(const ::testing::TestParamInfo<std::tuple<std::string, int, std::string>>& info) {
  std::string comm = std::get<2>(info.param);
  return std::get<0>(info.param) + "_W" + std::to_string(std::get<1>(info.param)) + (comm == "gloo" ? "" : "_" + comm);
}
INSTANTIATE_TEST_SUITE_P(Collectives, Dryrun,
                         ::testing::Combine(kCollectives, ::testing::Values(1, 2, 4, 8), ::testing::Values("gloo")),
                         dryrun_name);
INSTANTIATE_TEST_SUITE_P(CollectivesShm, Dryrun,
                         ::testing::Combine(kCollectives, ::testing::Values(2, 4), ::testing::Values("shm")),
                         dryrun_name);

TEST(DryrunIds, AcceptsOriginalIdAndStem) {
  for (std::string key : {"7", "7_reducescatter", "coll_reducescatter"}) {
    PkbRun r = run_pkb({"dryrun", "-p", key, "--device", "cpu", "-w", "2"});
    EXPECT_EQ(r.code, 0) << key << r.err;
    EXPECT_TRUE(contains(r.out, "coll_reducescatter")) << r.out;
  }
}

// The saved outputs above are hundreds of MB a test: the test process's scratch goes when it
// ends (a suite that kept it once filled /tmp with 60 GB), and stays where a test failed.
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
