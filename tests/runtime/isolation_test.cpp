// The reference's answers out of a candidate's reach, and its timing out of a candidate's
// pay, on the CPU device: the reference is timed in the candidate's process, alone before
// the candidate is loaded and then in blocks between the candidate's, and credited at most
// a little over that baseline, so a candidate that slows the reference down (host threads
// that spin while it is not being called, or once its own calls are over) earns no more; a
// sweep that evaluates a saboteur first leaves nothing behind for the next; the reference's
// answers never enter the candidate's process, so a candidate that tampers with what it
// finds there only spoils its own inputs; a candidate rank that writes to pkb's channel
// outside its own keys is caught; the same code on both sides times the same. Run alone:
// another test's load is not what they measure.
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

const std::string kSaboteur = kSrc + "/tests/candidates/cpu/host_saboteur.cpp";
const std::string kReferenceSaboteur = kSrc + "/tests/candidates/cpu/reference_saboteur.cpp";
const std::string kHonest = kSrc + "/solutions_cpu/coll_allreduce.cpp";

json read_json(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

// 3 trials, 5 warm-up and 10 timed calls: the host saboteur's 18 calls, then it spins.
const std::vector<std::string> kShort = {"--device", "cpu", "-w", "2", "-n", "3", "--warmup", "5", "--iters", "10"};

json eval_one(const std::string& solution, const std::string& dir, std::vector<std::string> extra = kShort) {
  std::vector<std::string> a = {"eval", "-p", "coll_allreduce", "-s", solution, "--json", dir + "/r.json"};
  a.insert(a.end(), extra.begin(), extra.end());
  PkbRun r = run_pkb(a, 600);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  return read_json(dir + "/r.json");
}

// The speedup a record reports is the rounds' own, unless the reference ran slower beside
// the candidate than (1 + drift) times its baseline, times the machine's own slow-down as
// credited (timing.machine): then the rounds' times the cap, and the flag says so.
void expect_capped_where_slowed(const json& r, double drift = 0.10) {
  const json& t = r["timing"];
  double base = t["baseline"]["median_us"], beside = t["reference"]["median_us"];
  double rounds = t["rounds"]["estimate"]["speedup"], speedup = r["speedup"];
  ASSERT_TRUE(t["machine"].is_object()) << t.dump();
  double machine = t["machine"]["credited"];
  EXPECT_GE(machine, 1.0);
  EXPECT_LE(machine, 1.25);
  double bound = base * machine * (1 + drift);
  bool slowed = beside > bound;
  EXPECT_EQ(contains(r["flags"].dump(), "reference_slowed"), slowed) << t.dump();
  EXPECT_NEAR(speedup, slowed ? rounds * bound / beside : rounds, 1e-9 * rounds) << t.dump();
}

}  // namespace

// A candidate whose threads spin whenever it is not being called slows down the reference
// timed between its calls: the reference is credited no more than its baseline allows, so
// the candidate earns at most the drift allowance from it. (Timed beside the candidate with
// no such bound, the reference would be as slow as the candidate makes it.)
TEST(Isolation, ACandidateThatSlowsTheReferenceEarnsAtMostTheDrift) {
  std::string dir = temp_dir("reference-saboteur");
  json r = eval_one(kReferenceSaboteur, dir, {"--device", "cpu", "-w", "1", "-n", "3", "--warmup", "10", "--iters", "30"});
  ASSERT_EQ(r["verdict"], "correct") << r["message"];
  expect_capped_where_slowed(r);
  // Its spinning threads would slow the judge's own reference too, and so buy the machine's
  // credit (unheld, once: 1.54x, credited the whole 1.25); the judge holds the candidate rank
  // stopped for each of its blocks, and a block it could not hold would count nothing (zeros,
  // left out): every call of every round's block is there. (The drift itself is this box's
  // noise, 1.0-1.24x held: too wide to assert on; launch's Stopped test holds a spinning process.)
  const json& m = r["timing"]["machine"];
  const json& rounds = r["timing"]["rounds"];
  EXPECT_EQ(m["rounds"]["samples"].get<int>(), rounds["count"].get<int>() * rounds["block"].get<int>()) << m.dump();
  // Its threads were seen at work while the reference's blocks ran (they spin between its
  // own calls too, so its blocks are no quieter): the machine's drift is credited no more
  // than --machine-drift.
  const json& host = r["timing"]["host"];
  double ref_share = host["reference"]["new_threads_run_ms"].get<double>() / host["reference"]["wall_ms"].get<double>();
  EXPECT_GT(ref_share, 0.2) << host.dump();
  EXPECT_NE(r["timing"].value("candidate_beside", ""), "") << r["timing"].dump();
  EXPECT_LE(m["credited"].get<double>(), 1.25);
}

// A candidate whose threads spin once its own calls are done slows what comes after it,
// both sides alike where the rounds are still going, and nothing once they end; the
// reference is held to its baseline all the same.
TEST(Isolation, ASaboteurAfterItsCallsEarnsNoSpeedup) {
  std::string dir = temp_dir("saboteur");
  json sab = eval_one(kSaboteur, dir);
  ASSERT_EQ(sab["verdict"], "correct") << sab["message"];
  expect_capped_where_slowed(sab);
}

// A sweep with a saboteur first: each evaluation times its own reference in its own
// processes, and nothing of the saboteur outlives its evaluation, so the honest candidate
// after it times the reference as a sweep that has it alone does (within this machine's
// noise); each evaluation drew its own inputs.
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
  double ratio = after["timing"]["baseline"]["median_us"].get<double>() / alone[0]["timing"]["baseline"]["median_us"].get<double>();
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

// Both sides are timed in the candidate rank, in rounds that alternate them: the same code
// on both sides (@reference) comes out near 1.0 (the rounds' estimate within 15%, its
// interval holding 1.0; separate
// processes or an added output copy put it at 0.4-2.4x). Run alone: two cores shared with
// other tests move CPU calls 2-5x from one round to the next (the GPU's figures, with their
// intervals, are in bench/results). The record has the baseline (the reference alone before
// the candidate is loaded), each round's medians, and why the rounds ended. Problems whose
// calls take a millisecond or more on this machine, so that its scheduler's noise is a small
// part (not every problem's CPU calls are steady here: bench/results/cpu_same_code.md).
TEST(Isolation, TheSameCodeTimesTheSameOnBothSides) {
  for (std::string problem : {"tp_gemm_allgather", "coll_allreduce"}) {
    std::string out = temp_dir("rounds-" + problem) + "/r.json";
    // float32: CPUs without bf16 instructions take a second for tp_gemm_allgather's bf16 GEMM.
    PkbRun r = run_pkb({"eval", "-p", problem, "-s", "@reference", "--device", "cpu", "-w", "1", "--trials", "2",
                        "--warmup", "20", "--iters", "60", "--dtype", "float32", "--json", out},
                       600);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    json j = read_json(out);
    EXPECT_EQ(j["verdict"], "correct") << j["message"];
    const json& ci = j["speedup_interval"];
    double rounds_speedup = j["timing"]["rounds"]["estimate"]["speedup"].get<double>();
    EXPECT_GT(rounds_speedup, 1 / 1.15) << problem << ": " << j["timing"].dump();
    EXPECT_LT(rounds_speedup, 1.15) << problem << ": " << j["timing"].dump();
    double speedup = j["speedup"].get<double>();  // the rounds', capped where the reference ran slower than alone
    EXPECT_LE(speedup, rounds_speedup * (1 + 1e-9));
    EXPECT_LE(ci["lo"].get<double>(), speedup);
    EXPECT_GE(ci["hi"].get<double>(), speedup);
    // The interval holds 1.0 but for the CPU's few percent (a 95% interval misses by design
    // one run in twenty).
    EXPECT_LE(ci["lo"].get<double>(), 1.05) << problem << ": " << j["timing"].dump();
    EXPECT_GE(ci["hi"].get<double>(), 0.95) << problem << ": " << j["timing"].dump();
    EXPECT_EQ(ci["method"], "rounds");
    // 60 calls a side in blocks of 10 where the budget holds them (fewer, in smaller blocks,
    // on a slow machine); no more on the CPU device.
    const json& rounds = j["timing"]["rounds"];
    int count = rounds["count"], block = rounds["block"];
    EXPECT_TRUE(count >= 6 && count % 2 == 0 && count * block <= 60) << rounds.dump();
    EXPECT_EQ(rounds["medians_us"].size(), size_t(count));
    EXPECT_GT(j["run"]["counts"]["reference"]["baseline"].get<int>(), 0);
    EXPECT_GT(j["timing"]["baseline"]["median_us"].get<double>(), 0);
    EXPECT_EQ(j["timing"]["clock"], "candidate_rank");
    EXPECT_TRUE(contains(r.out, std::to_string(count) + " rounds of " + std::to_string(block))) << r.out;
    // The judge timed the reference in its own process too, beside the baseline and a block
    // at every round's end: the machine's pace, which the bound on the reference allows for.
    const json& machine = j["timing"]["machine"];
    ASSERT_TRUE(machine.is_object()) << j["timing"].dump();
    EXPECT_GT(machine["baseline"]["samples"].get<int>(), 0);
    EXPECT_EQ(machine["rounds"]["samples"].get<int>(), count * block);
    EXPECT_GE(machine["credited"].get<double>(), 1.0);
    EXPECT_LE(machine["credited"].get<double>(), 1.25);
    EXPECT_TRUE(contains(r.out, "machine: the reference in the judges' own processes took")) << r.out;
    // The same code on both sides: nothing of a candidate beside the reference, no bound.
    ASSERT_TRUE(j["timing"]["host"].is_object()) << j["timing"].dump();
    EXPECT_GT(j["timing"]["host"]["reference"]["wall_ms"].get<double>(), 0);
    EXPECT_FALSE(j["timing"].contains("candidate_beside")) << j["timing"].dump();
    EXPECT_TRUE(contains(r.out, "beside the reference: nothing of the candidate seen")) << r.out;
  }
}
