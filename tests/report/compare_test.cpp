// pkb report --against on two made-up nights (tests/report/fixtures/compare, its README.md
// lists every pair and what it must come out as): the pairing, each pair's change (a
// regression, an improvement, verdict changes, overlapping intervals and changes under the
// threshold that must not be flagged, CPU-device timings that never count, a pair with no
// interval), the warnings for runs whose environments differ, the command's formats and
// exit codes, and its HTML page in headless Chromium.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "report/compare.hpp"
#include "report_support.hpp"
#include "support.hpp"

using namespace pkbtest;
using namespace pkb::report;
using json = nlohmann::json;

namespace {

const std::string kDir = std::string(PKB_SOURCE_DIR) + "/tests/report/fixtures/compare";
const std::string kThen = kDir + "/then.jsonl", kNow = kDir + "/now.jsonl";

std::string slurp_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A pair by "problem/sample_k" of now's candidate.
std::map<std::string, Pair> by_candidate(const Comparison& c) {
  std::map<std::string, Pair> out;
  for (auto& p : c.pairs) {
    std::string file = p.now.path.substr(p.now.path.rfind('/') + 1);
    out[p.now.problem + "/" + file.substr(0, file.find('.'))] = p;
  }
  return out;
}

Comparison fixtures(const CompareSettings& s = {}) { return compare(load_results({kThen}), load_results({kNow}), s); }

// Each line of `from` through `edit`, written to `to`.
void rewrite(const std::string& from, const std::string& to, const std::function<void(json&)>& edit) {
  std::istringstream in(slurp_file(from));
  std::ofstream out(to);
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line);
    edit(j);
    out << j.dump() << "\n";
  }
}

}  // namespace

TEST(Compare, EachPairOfTheFixturesComesOutAsTheReadmeSays) {
  Comparison c = fixtures();
  ASSERT_EQ(c.pairs.size(), 13u);
  auto p = by_candidate(c);
  auto expect = [&](const std::string& key, Change change, const std::string& why) {
    ASSERT_TRUE(p.count(key)) << key;
    EXPECT_STREQ(change_name(p[key].change), change_name(change)) << key << ": " << p[key].why;
    EXPECT_EQ(p[key].why, why) << key;
  };
  expect("coll_allreduce/sample_0", Change::regression, "-25.0%, the intervals apart");
  expect("coll_allgather/sample_0", Change::improvement, "+50.0%, the intervals apart");
  expect("coll_broadcast/sample_0", Change::unchanged, "-10.0%: the intervals overlap");
  expect("coll_reduce/sample_0", Change::unchanged, "-3.0%: within the 5% threshold");
  expect("coll_scatter/sample_0", Change::broke, "correct -> wrong: rank 1, output 'y', trial 0: 12 elements differ");
  expect("coll_gather/sample_0", Change::broke, "a new integrity_violation (was wrong): rank 2: late_work");
  expect("coll_alltoall/sample_0", Change::fixed, "wrong -> correct");
  expect("coll_reducescatter/sample_0", Change::unchanged, "+0.8%: the intervals overlap");
  expect("coll_allreduce/sample_7", Change::unchanged,
         "+0.0%: the intervals overlap (then solutions_cuda/nightly/coll_allreduce/sample_1.cu)");
  expect("coll_allreduce/sample_2", Change::not_counting,
         "timing does not count for speed (CPU device): verdicts compared only");
  expect("coll_allreduce/sample_3", Change::no_interval, "-50.0%, but no interval then to tell it from noise");
  expect("coll_allgather/sample_1", Change::verdict_changed, "wrong -> timeout: rank 2 overran its deadline in trial 0");
  expect("coll_broadcast/sample_1", Change::unchanged, "compile_error both times");

  EXPECT_EQ(p["coll_reducescatter/sample_0"].matched_by, "path") << "edited in place: another sha256";
  EXPECT_EQ(p["coll_allreduce/sample_7"].matched_by, "sha256") << "moved: the same source";
  EXPECT_EQ(p["coll_allreduce/sample_0"].matched_by, "sha256");
  EXPECT_NEAR(*p["coll_allreduce/sample_0"].ratio, 0.75, 1e-12);
  EXPECT_EQ(p["coll_allreduce/sample_0"].then_interval->kind, "95% CI") << "the recorded interval, when there is one";
  const Pair& quartiles = p["coll_allgather/sample_0"];
  EXPECT_EQ(quartiles.then_interval->kind, "quartiles");
  EXPECT_NEAR(quartiles.then_interval->low, 95.0 / 105, 1e-9);
  EXPECT_NEAR(quartiles.now_interval->low, 95.0 / 69, 1e-9);

  // Verdict changes first (broke, fixed, other), then regressions, improvements, the rest.
  std::vector<std::string> order;
  for (auto& x : c.pairs) order.push_back(change_name(x.change));
  EXPECT_EQ(order, (std::vector<std::string>{"broke", "broke", "fixed", "verdict_changed", "regression", "improvement",
                                             "unchanged", "unchanged", "unchanged", "unchanged", "unchanged",
                                             "not_counting", "no_interval"}));
  EXPECT_EQ(c.pairs[0].now.problem, "coll_scatter") << "by problem id within a change";
  EXPECT_EQ(c.regressions(), 3u) << "two broke, one slower";
  ASSERT_EQ(c.only_then.size(), 1u);
  EXPECT_EQ(c.only_then[0].problem, "dp_layernorm_bwd_allreduce");
  ASSERT_EQ(c.only_now.size(), 1u);
  EXPECT_EQ(c.only_now[0].path, "solutions_cuda/nightly/coll_allgather/sample_2.cu");
  // Only the unpaired are warned about: the commits and seeds differ every night.
  ASSERT_EQ(c.warnings.size(), 1u) << c.warnings[0];
  EXPECT_EQ(c.warnings[0], "1 evaluation only then and 1 only now are not compared (listed under 'Not in both')");
}

// Intervals that overlap are noise, whatever the change; intervals apart are a change only
// past the threshold; a lower threshold flags the small one.
TEST(Compare, OverlappingIntervalsAreNeverFlaggedAndTheThresholdDecidesSmallChanges) {
  Pair p;
  p.then.verdict = p.now.verdict = "correct";
  p.then.timing_counts = p.now.timing_counts = true;
  p.then.speedup = 2.0;
  p.then.interval_low = 1.0, p.then.interval_high = 3.0;
  p.now.speedup = 1.2;  // -40%, but now's interval reaches into then's
  p.now.interval_low = 0.9, p.now.interval_high = 1.1;
  judge_pair(p, {});
  EXPECT_STREQ(change_name(p.change), "unchanged") << p.why;
  p.now.interval_high = 0.99;  // apart
  judge_pair(p, {});
  EXPECT_STREQ(change_name(p.change), "regression") << p.why;

  Comparison strict = fixtures({0.02});
  EXPECT_STREQ(change_name(by_candidate(strict)["coll_reduce/sample_0"].change), "regression")
      << "-3% with the intervals apart passes a 2% threshold";
  EXPECT_STREQ(change_name(by_candidate(strict)["coll_broadcast/sample_0"].change), "unchanged")
      << "overlapping intervals stay unflagged at any threshold";
  EXPECT_EQ(strict.regressions(), 4u);
}

// CPU-device timings (and any that do not count) are compared for verdicts, never for speed.
TEST(Compare, TimingsThatDoNotCountAreComparedForVerdictsOnly) {
  Pair p;
  p.then.verdict = p.now.verdict = "correct";
  p.then.speedup = 3.0;
  p.now.speedup = 0.5;
  p.then.timing_note = p.now.timing_note = "CPU device";
  p.then.interval_low = 2.9, p.then.interval_high = 3.1;
  p.now.interval_low = 0.4, p.now.interval_high = 0.6;
  judge_pair(p, {});
  EXPECT_STREQ(change_name(p.change), "not_counting") << p.why;
  p.now.verdict = "wrong";
  judge_pair(p, {});
  EXPECT_STREQ(change_name(p.change), "broke") << "a verdict change counts on any device";
}

// Why a correct CUDA timing does not count is said by name: a noisy timing, hosts whose
// speeds were apart (host_mismatch, in records from before the timed rounds), or a timing
// violation proper.
TEST(Compare, EachDoubtAboutATimingSaysItsOwnName) {
  std::string dir = temp_dir("compare-doubts");
  std::vector<std::pair<json, std::string>> cases = {{json::array({"noisy_timing"}), "noisy timing"},
                                                     {json::array({"noisy_reference"}), "noisy timing"},
                                                     {json::array({"noisy_gate"}), "noisy timing"},
                                                     {json::array({"host_mismatch"}), "hosts apart"},
                                                     {json::array({"timing_escape"}), "timing violation"},
                                                     {json::array(), ""}};
  for (auto& [flags, note] : cases) {
    rewrite(kNow, dir + "/now.jsonl", [&](json& j) { j["flags"] = flags; });
    Results r = load_results({dir + "/now.jsonl"});
    int seen = 0;
    for (auto& e : r.evaluations)
      if (e.correct() && e.device == "cuda" && e.speedup) {
        EXPECT_EQ(e.timing_note, note) << flags.dump() << " " << e.problem;
        EXPECT_EQ(e.timing_counts, note.empty()) << flags.dump();
        ++seen;
      }
    EXPECT_GT(seen, 0) << "the fixture has correct CUDA timings";
  }
}

// Nights on other hardware or software are compared all the same, with a warning per field
// that differs; pairs are made only at the same W and size.
TEST(Compare, MismatchedEnvironmentsAreComparedWithAWarningSayingWhatDiffers) {
  std::string dir = temp_dir("compare-env");
  rewrite(kNow, dir + "/now.jsonl", [](json& j) {
    j["versions"]["torch"] = "2.12.0+cu130";
    j["versions"]["cuda_driver"] = 13010;
    j["run"]["hardware_profile"] = "h200_8";
    if (j["run"]["device"] == "cuda") j["run"]["gpu"] = "NVIDIA H200";
    if (j["problem"] == "coll_reduce") j["run"]["world"] = 8;
  });
  Comparison c = compare(load_results({kThen}), load_results({dir + "/now.jsonl"}));
  std::string all;
  for (auto& w : c.warnings) all += w + "\n";
  for (const char* want :
       {"then and now differ in hardware profile (then h100_4; now h200_8): speed changes may come from this, not "
        "from the candidates\n",
        "then and now differ in GPU (then NVIDIA H100 80GB HBM3; now NVIDIA H200): speed changes may come from this",
        "then and now differ in CUDA driver (then 13.0; now 13.1)",
        "then and now differ in torch (then 2.11.0+cu130; now 2.12.0+cu130)",
        "then and now differ in W (then 4; now 4, 8): only pairs evaluated at the same one are compared\n",
        "2 evaluations only then and 2 only now are not compared"})
    EXPECT_TRUE(contains(all, want)) << "missing '" << want << "' in\n" << all;
  EXPECT_FALSE(contains(all, "pkb version")) << all;
  EXPECT_FALSE(contains(all, "NCCL")) << all;
  EXPECT_EQ(c.pairs.size(), 12u) << "coll_reduce moved to W=8: not paired";
  EXPECT_EQ(c.count(Change::regression), 1u) << "still compared";
}

// The command: every format, the exit code a CI job acts on, and the same runs compared
// with themselves.
TEST(ReportAgainst, WritesEveryFormatAndFailsOnARegressionWhenAsked) {
  std::string dir = temp_dir("against-cli");
  PkbRun r = run_pkb({"report", "--against", kThen, kNow, "--md", dir + "/c.md", "--html", dir + "/c.html", "--json",
                      dir + "/c.json", "--fail-on-regression"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(r.err, "pkb: 3 regressions against the earlier results (--fail-on-regression)\n");
  json j = json::parse(slurp_file(dir + "/c.json"));
  EXPECT_EQ(j["schema"], "pkb.comparison/1");
  EXPECT_EQ(j["regressions"], 3);
  EXPECT_EQ(j["counts"], (json{{"pairs", 13}, {"only_then", 1}, {"only_now", 1}, {"broke", 2}, {"fixed", 1},
                                {"verdict_changed", 1}, {"regression", 1}, {"improvement", 1}, {"unchanged", 5},
                                {"not_counting", 1}, {"no_interval", 1}}));
  EXPECT_EQ(j["then"]["files"], json::array({kThen}));
  EXPECT_DOUBLE_EQ(j["threshold"].get<double>(), 0.05);
  const json& reg = j["pairs"][4];
  EXPECT_EQ(reg["change"], "regression");
  EXPECT_EQ(reg["problem"], "coll_allreduce");
  EXPECT_DOUBLE_EQ(reg["then"]["speedup"].get<double>(), 2.0);
  EXPECT_EQ(reg["now"]["interval"], (json{{"low", 1.4}, {"high", 1.6}, {"kind", "95% CI"}}));
  EXPECT_DOUBLE_EQ(reg["ratio"].get<double>(), 0.75);

  std::string md = slurp_file(dir + "/c.md");
  EXPECT_TRUE(contains(md, "- **outcome**: 3 regressions (2 verdict, 1 speed), 1 faster, 1 fixed, 1 other verdict change\n"))
      << md;
  EXPECT_TRUE(contains(md, "| regression | coll_allreduce | 4 | default | solutions_cuda/nightly/coll_allreduce/sample_0.cu "
                           "| correct | -25.0%, the intervals apart | 2.00x [1.90-2.10] | 1.50x [1.40-1.60] |"))
      << md;
  EXPECT_LT(md.find("## Verdict changes"), md.find("## Speed changes")) << "verdict changes come first";
  EXPECT_TRUE(contains(md, "| not_counting | coll_allreduce | 4 | default | solutions_cpu/nightly/coll_allreduce/sample_2.cpp "
                           "| correct | timing does not count for speed (CPU device): verdicts compared only | (3.00x) | "
                           "(1.00x) |"))
      << md;
  EXPECT_TRUE(contains(r.out, "\nVerdict changes\n")) << r.out;
  std::string html = slurp_file(dir + "/c.html");
  EXPECT_TRUE(contains(html, "aria-label=\"speedup now over then, per pair\"")) << "the chart of the changes";
  for (const char* outside : {"<script", "src=", "url(", "@import", "href=\"http", "href=\"//"})
    EXPECT_FALSE(contains(html, outside)) << "the page refers outside itself: " << outside;

  r = run_pkb({"report", "--against", kThen, kNow});
  EXPECT_EQ(r.code, 0) << "without --fail-on-regression the comparison is only a report";
  r = run_pkb({"report", "--against", kNow, kNow, "--fail-on-regression", "--json", dir + "/same.json"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  json same = json::parse(slurp_file(dir + "/same.json"));
  EXPECT_EQ(same["counts"]["unchanged"], 12) << "all but the CPU-device pair and the one without intervals";
  EXPECT_EQ(same["counts"]["pairs"], 14);
  // A lower threshold flags the -3% one too.
  r = run_pkb({"report", "--against", kThen, kNow, "--threshold", "2%", "--json", dir + "/t.json"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(json::parse(slurp_file(dir + "/t.json"))["counts"]["regression"], 2);
}

TEST(ReportAgainst, BadInputGetsOneErrorLine) {
  std::string dir = temp_dir("against-bad");
  auto expect_error = [](const std::vector<std::string>& args, const std::string& says) {
    PkbRun r = run_pkb(args);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "pkb: error: " + says)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  expect_error({"report", "--against", "/nonexistent", kNow},
               "--against /nonexistent: no such results file or folder");
  std::filesystem::create_directories(dir + "/old");
  std::ofstream(dir + "/old/doctor.json") << "{\"devices\": []}\n";
  PkbRun r = run_pkb({"report", "--against", dir + "/old", kNow});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: no pkb.eval/1 result in --against " + dir + "/old/doctor.json")) << r.err;
  expect_error({"report", "--against", kThen, kNow, "--threshold", "five"},
               "--threshold takes a percentage from 0 to 100 (e.g. 5 or 5%), not 'five'");
  expect_error({"report", kNow, "--fail-on-regression"},
               "--threshold and --fail-on-regression compare with earlier results: add --against OLD");
}

// The page in headless Chromium: it fits a laptop's screen, and its chart draws now's
// speedup over then's for each pair whose timings count, flagged ones first, each with the
// range of the change under it (none for the pair without intervals).
TEST(ReportAgainst, HtmlChartRendersInHeadlessChromium) {
  std::string chromium = chromium_or_skip();
  NEED_CHROMIUM(chromium);
  std::string dir = temp_dir("against-shot");
  PkbRun r = run_pkb({"report", "--against", kThen, kNow, "--html", dir + "/c.html"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string shot = dir + "/shot.png";
  expect_layout_fits(chromium, dir + "/c.html", shot);
  ASSERT_TRUE(std::filesystem::exists(shot));
  // Flagged (the -25% regression, the +50% improvement), then by the size of the change:
  // 0.5 (no interval), 0.9, 0.97, 1.0077, 1.0.
  std::ofstream(dir + "/expect.json") << R"({
    "colours": {"faster": "#2563eb", "slower": "#f59e0b", "spread": "#0f766e", "header": "#eef2ff"},
    "header": true, "min_bar": 3,
    "charts": [{"bars": [["slower", 0.75], ["faster", 1.5], ["slower", 0.5], ["slower", 0.9], ["slower", 0.97],
                         ["faster", 1.00769], ["faster", 1.0]],
                "spread": [[0.66667, 0.84211], [1.24569, 1.81332], null, [0.625, 1.3125], [0.9505, 0.9899],
                           [0.85714, 1.16667], [0.90476, 1.10526]]}],
    "stack": [], "verdicts": []})";
  auto check = pkb::launch::run_process(
      {PKB_PYTHON, std::string(PKB_SOURCE_DIR) + "/tests/report/check_screenshot.py", shot, dir + "/expect.json"}, 300);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}
