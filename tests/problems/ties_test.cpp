// Outputs that are choices among equal keys (a spec's `ties`: top-k labels, a place in a
// sort) are judged by the keys chosen. For each such output, through a real `pkb eval` on
// the CPU device (tests/candidates/ties/): a candidate that breaks ties another way than
// the reference is `correct`, and its saved outputs really differ from the reference's
// (`pkb compare`, which compares values only, says so); a candidate that makes one choice
// no tie excuses is `wrong`, and the failure says it is no valid choice.
#include <gtest/gtest.h>

#include <ostream>

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

void PrintTo(const TieCase& c, std::ostream* os) { *os << c.problem; }

// Trial 0's outputs saved in `dir` are not the reference's values (pkb compare, values
// only): the candidate really broke ties otherwise, so its `correct` is the ties' doing.
void expect_saved_output_differs(const std::string& problem, const std::string& dir, const std::string& output) {
  PkbRun cmp = run_pkb({"compare", dir + "/candidate", dir + "/reference", "-p", problem});
  EXPECT_EQ(cmp.code, 1) << cmp.out << cmp.err;
  bool differs = false;
  std::istringstream lines(cmp.out);
  for (std::string line; std::getline(lines, line);)
    differs = differs || (contains(line, " " + output + ": ") && contains(line, "elements differ"));
  EXPECT_TRUE(differs) << "no rank's " << output << " differs from the reference's:\n" << cmp.out;
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
  expect_saved_output_differs(c.problem, dir, c.output);
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

// The candidate of the issue that brought ties in: torch.topk, which breaks exact ties as
// its kernel happens to. Without ties it failed nearly every run.
TEST(Ties, KnnOnTorchTopkIsCorrect) {
  std::string dir = temp_dir("knn-topk");
  PkbRun r = run_pkb({"eval", "-p", "dp_dinov2_knn", "-s", candidate("knn_topk.py"), "--device", "cpu", "-w", "2",
                      "--seed", "20261201", "--trials", "3", "--warmup", "1", "--iters", "2", "--save-outputs", dir});
  if (contains(r.out, "built without embedded Python")) GTEST_SKIP() << "pkb was built without embedded Python";
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "verdict: correct")) << r.out << r.err;
  EXPECT_TRUE(survivors(r.tag).empty());
  expect_saved_output_differs("dp_dinov2_knn", dir, "output_1");
}

}  // namespace
