// The memory plan from the command line, with no rank started: pkb eval --dry-plan, a
// refusal in one line when a problem cannot fit (the CPU device with a small limit), and
// pkb plan over every problem at the large preset.
#include <gtest/gtest.h>

#include <sstream>

#include "support.hpp"

using namespace pkbtest;

namespace {


std::vector<std::string> eval_args(std::vector<std::string> extra) {
  std::vector<std::string> a = {"eval", "-p", "coll_allreduce", "-s", kSrc + "/solutions_cpu/coll_allreduce.cpp",
                                "--device", "cpu", "-w", "2"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

int lines_of(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace

TEST(Plan, DryPlanPrintsThePartsAndStartsNothing) {
  PkbRun r = run_pkb(eval_args({"--dry-plan"}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (auto part : {"candidate rank:", "inputs and outputs (one set)", "captured outputs (101 calls)",
                    "the candidate's own heap", "judge rank:", "reference (peak", "on each device:"})
    EXPECT_TRUE(contains(r.out, part)) << part << "\n" << r.out;
  EXPECT_FALSE(contains(r.out, "verdict")) << r.out;
  EXPECT_TRUE(survivors(r.tag).empty());
}

TEST(Plan, AProblemThatCannotFitIsRefusedInOneLine) {
  PkbRun r = run_pkb(eval_args({"--size", "M=16384,N=16384", "--memory-limit", "1"}));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(lines_of(r.err), 1) << r.err;
  EXPECT_TRUE(contains(r.err, "pkb: error: coll_allreduce at --size M=16384,N=16384 on 2 ranks needs ~")) << r.err;
  EXPECT_TRUE(contains(r.err, "which has 1.0 GiB available")) << r.err;
  EXPECT_TRUE(contains(r.err, "--dry-plan shows the parts")) << r.err;
  EXPECT_FALSE(contains(r.out, "verdict")) << "nothing ran:\n" << r.out;
  EXPECT_TRUE(survivors(r.tag).empty());
}

// Every problem's plan at the large preset for W = 1 and 8 on H200s (the table in
// bench/results/large_plan_h200.md), printed without a rank started.
TEST(Plan, EveryLargePresetAtOneAndEightRanks) {
  PkbRun r = run_pkb({"plan", "--size", "large", "-w", "1,8", "--hardware", "h200_8"});
  ASSERT_LE(r.code, 1) << r.err;
  std::istringstream in(r.out);
  int rows = 0, fits = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| ", 0) != 0 || line.rfind("| problem", 0) == 0) continue;
    ++rows;
    if (contains(line, "| yes") || contains(line, "not run:")) ++fits;
  }
  EXPECT_EQ(rows, 2 * 87) << r.out;
  EXPECT_EQ(fits, rows) << "every large preset fits one H200 a rank:\n" << r.out;
  EXPECT_EQ(r.code, 0);
  // No H200 profile or limit given: one line naming the fix.
  PkbRun none = run_pkb({"plan", "-p", "coll_allreduce"});
  EXPECT_EQ(none.code, 2);
  EXPECT_TRUE(contains(none.err, "--hardware NAME")) << none.err;
}
