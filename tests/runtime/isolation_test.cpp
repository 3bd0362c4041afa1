// The reference and its answers out of a candidate's reach, on the CPU device: the
// reference is timed by judge ranks before any candidate exists, so a candidate that
// sabotages what comes after its own calls (host threads that spin) earns no speedup, and
// a sweep that evaluates it first times the reference as if it were not there; the
// reference's inputs and outputs never enter the candidate's process, so a candidate that
// tampers with what it finds there only spoils its own inputs; a candidate rank that writes
// to pkb's channel outside its own keys is caught.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace pkbtest;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = PKB_SOURCE_DIR;
const std::string kSaboteur = kSrc + "/tests/candidates/cpu/host_saboteur.cpp";
const std::string kHonest = kSrc + "/solutions_cpu/coll_allreduce.cpp";

json read_json(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

// 3 trials, 5 warm-up and 10 timed calls: the saboteur's 18 calls, then it spins.
const std::vector<std::string> kShort = {"--device", "cpu", "-w", "2", "-n", "3", "--warmup", "5", "--iters", "10"};

json eval_fresh(const std::string& solution, const std::string& dir) {
  std::vector<std::string> a = {"eval", "-p", "coll_allreduce", "-s", solution, "--json", dir + "/r.json",
                                "--no-reference-cache"};
  a.insert(a.end(), kShort.begin(), kShort.end());
  PkbRun r = run_pkb(a, 600, {{"PKB_CACHE_DIR", dir + "/cache"}});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  return read_json(dir + "/r.json");
}

double reference_median(const json& r) { return r["timing"]["reference"]["median_us"].get<double>(); }

}  // namespace

// A candidate whose threads spin once its own calls are done is timed against the same
// reference as an honest one: the judges timed it before either existed. (Timed in the
// candidate's process after its calls, the spinning made the reference several times
// slower.) CPU timings are noisy, so the bound is loose; the sabotage was not.
TEST(Isolation, ASaboteurDoesNotSlowTheReference) {
  std::string dir = temp_dir("saboteur");
  fs::create_directories(dir + "/s");
  fs::create_directories(dir + "/h");
  json sab = eval_fresh(kSaboteur, dir + "/s");
  json honest = eval_fresh(kHonest, dir + "/h");
  ASSERT_EQ(sab["verdict"], "correct") << sab["message"];
  ASSERT_EQ(honest["verdict"], "correct") << honest["message"];
  EXPECT_FALSE(sab["timing"]["reference_cached"].get<bool>());
  double ratio = reference_median(sab) / reference_median(honest);
  EXPECT_GT(ratio, 1 / 2.5) << sab["timing"] << honest["timing"];
  EXPECT_LT(ratio, 2.5) << sab["timing"] << honest["timing"];
}

// A sweep times each problem's reference once, with the first evaluation; a saboteur first
// must not leave its mark on the honest candidates after it. The honest candidate's
// reference median after a saboteur is within noise of a sweep that has it alone; each
// evaluation drew its own inputs.
TEST(Isolation, ASweepWithASaboteurFirstTimesTheReferenceAsAlone) {
  std::string dir = temp_dir("sweep-saboteur");
  auto place = [&](const std::string& root, const std::string& run, const std::string& file) {
    fs::create_directories(root + "/" + run + "/coll_allreduce");
    fs::copy_file(file, root + "/" + run + "/coll_allreduce/sample_0.cpp");
  };
  place(dir + "/both/solutions_cpu", "a_saboteur", kSaboteur);
  place(dir + "/both/solutions_cpu", "b_honest", kHonest);
  place(dir + "/alone/solutions_cpu", "b_honest", kHonest);
  auto sweep = [&](const std::string& which) {
    std::vector<std::string> a = {"sweep", "--solutions", dir + "/" + which + "/solutions_cpu", "--problems",
                                  "coll_allreduce", "--out", dir + "/" + which + ".jsonl", "--device", "cpu",
                                  "-w", "2", "-n", "3", "--warmup", "5", "--iters", "10"};
    PkbRun r = run_pkb(a, 900, {{"PKB_CACHE_DIR", dir + "/" + which + "-cache"}});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    std::vector<json> lines;
    std::ifstream f(dir + "/" + which + ".jsonl");
    for (std::string line; std::getline(f, line);) lines.push_back(json::parse(line));
    return lines;
  };
  std::vector<json> both = sweep("both"), alone = sweep("alone");
  ASSERT_EQ(both.size(), 2u);
  ASSERT_EQ(alone.size(), 1u);
  const json& sab = both[0]["sweep"]["run"] == "a_saboteur" ? both[0] : both[1];
  const json& after = both[0]["sweep"]["run"] == "a_saboteur" ? both[1] : both[0];
  ASSERT_EQ(sab["verdict"], "correct") << sab["message"];
  ASSERT_EQ(after["verdict"], "correct") << after["message"];
  ASSERT_EQ(alone[0]["verdict"], "correct") << alone[0]["message"];
  // The saboteur came first and its judges timed the reference; the honest one reused it.
  EXPECT_FALSE(sab["timing"]["reference_cached"].get<bool>());
  EXPECT_TRUE(after["timing"]["reference_cached"].get<bool>());
  double ratio = reference_median(after) / reference_median(alone[0]);
  EXPECT_GT(ratio, 1 / 2.5) << after["timing"] << alone[0]["timing"];
  EXPECT_LT(ratio, 2.5) << after["timing"] << alone[0]["timing"];
  // Every evaluation drew its own inputs.
  EXPECT_NE(sab["run"]["seed"], after["run"]["seed"]);
}

// In the candidate's process there is no copy of its inputs but its own, and no reference:
// zeroing every copy it can find spoils only its own read-only input. (With the reference
// in the candidate's process, the same candidate was `correct` without communicating.)
TEST(Isolation, TamperingWithWhatTheProcessHoldsReachesNoReference) {
  std::string dir = temp_dir("tamper");
  for (bool timed : {false, true}) {
    std::vector<std::string> a = {"eval", "-p", "coll_allreduce", "-s", kSrc + "/tests/candidates/cpu/reference_tamper.cpp",
                                  "--json", dir + "/r.json"};
    a.insert(a.end(), kShort.begin(), kShort.end());
    if (!timed) a.push_back("--no-timing");
    PkbRun r = run_pkb(a);
    json j = read_json(dir + "/r.json");
    EXPECT_EQ(j["verdict"], "integrity_violation") << r.out << r.err;
    EXPECT_EQ(j["failure"]["reason"], "input_mutated") << j["message"];
  }
}

// A candidate rank that writes a judge's decision into pkb's store through its channel to
// the parent: refused at once, and the verdict says so.
TEST(Isolation, ACandidateRankCannotSpeakForItsJudge) {
  std::string dir = temp_dir("forge");
  std::vector<std::string> a = {"eval", "-p", "coll_allreduce", "-s", kSrc + "/tests/candidates/cpu/forge_channel.cpp",
                                "--json", dir + "/r.json"};
  a.insert(a.end(), kShort.begin(), kShort.end());
  PkbRun r = run_pkb(a);
  json j = read_json(dir + "/r.json");
  EXPECT_EQ(j["verdict"], "integrity_violation") << r.out << r.err;
  EXPECT_EQ(j["failure"]["reason"], "channel");
  EXPECT_TRUE(contains(j["message"].get<std::string>(), "j/pair/")) << j["message"];
  EXPECT_LT(r.seconds, 60);
}
