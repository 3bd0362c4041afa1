// Outputs that are choices among equal keys (a spec's `ties`: top-k labels, a place in a
// sort) are judged by the keys chosen. For each such output, through a real `pkb eval` on
// the CPU device (tests/candidates/ties/): a candidate that breaks ties another way than
// the reference is `correct`, and its saved outputs really differ from the reference's
// (`pkb compare`, which compares values only, says so); a candidate that makes one choice
// no tie excuses is `wrong`, and the failure says it is no valid choice.
#include <gtest/gtest.h>

#include <sstream>

#include "support.hpp"

using namespace pkbtest;

namespace {

struct TieCase {
  std::string problem;
  std::string output;       // its name in pkb compare's lines (output_<i>, or "output 0" alone)
  std::string other_way;    // breaks ties unlike the reference: correct
  std::string untied_error; // one choice no tie excuses: wrong
};

std::string candidate(const std::string& file) { return std::string(PKB_SOURCE_DIR) + "/tests/candidates/ties/" + file; }

std::vector<std::string> eval_args(const TieCase& c, const std::string& file) {
  return {"eval", "-p", c.problem, "-s", candidate(file), "--device", "cpu", "-w", "2", "--seed", "20261201",
          "--trials", "3", "--warmup", "1", "--iters", "2"};
}

class Ties : public ::testing::TestWithParam<TieCase> {};

TEST_P(Ties, AnotherTieBreakIsCorrect) {
  const TieCase& c = GetParam();
  std::string dir = temp_dir(c.problem + "-ties");
  std::vector<std::string> args = eval_args(c, c.other_way);
  args.insert(args.end(), {"--save-outputs", dir});
  PkbRun r = run_pkb(args);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "verdict: correct")) << r.out << r.err;
  EXPECT_TRUE(survivors(r.tag).empty());
  // Trial 0's outputs are not the reference's values: the ties were broken otherwise.
  PkbRun cmp = run_pkb({"compare", dir + "/candidate", dir + "/reference", "-p", c.problem});
  EXPECT_EQ(cmp.code, 1) << cmp.out << cmp.err;
  bool differs = false;
  std::istringstream lines(cmp.out);
  for (std::string line; std::getline(lines, line);) {
    if (!contains(line, " " + c.output + ": ")) continue;
    differs = differs || contains(line, "elements differ");
  }
  EXPECT_TRUE(differs) << "no rank's " << c.output << " differs from the reference's:\n" << cmp.out;
}

TEST_P(Ties, AnUntiedWrongChoiceIsWrong) {
  const TieCase& c = GetParam();
  PkbRun r = run_pkb(eval_args(c, c.untied_error));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "verdict: wrong")) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "not among the valid choices")) << r.out << r.err;
  EXPECT_TRUE(survivors(r.tag).empty());
}

INSTANTIATE_TEST_SUITE_P(
    Problems, Ties,
    ::testing::Values(TieCase{"dp_dinov2_knn", "output_1", "knn_ties_reversed.cpp", "knn_untied_swap.cpp"},
                      TieCase{"gnn_negative_scoring_rank", "output 0", "negative_rank_ties_last.cpp",
                              "negative_rank_untied_off.cpp"}),
    [](const ::testing::TestParamInfo<TieCase>& i) { return i.param.problem; });

}  // namespace
