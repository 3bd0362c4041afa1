// pkb report on hand-written results (tests/report/fixtures/sweep: two Slurm task files, a
// repeated evaluation, a torn last line, a log to ignore), checked against numbers worked
// out by hand; its HTML page rendered by headless Chromium and the screenshot checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "launch/subprocess.hpp"
#include "report_support.hpp"
#include "support.hpp"

using namespace pkbtest;
using json = nlohmann::json;

namespace {

const std::string kFixtures = std::string(PKB_SOURCE_DIR) + "/tests/report/fixtures/sweep";

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The fixtures, by hand (CUDA results on 4 H100s, W=4, default size, seed 12345 everywhere):
//   alpha  coll_allreduce  s0 correct 2.5x (roofline 0.5), s1 correct 1.2x (0.3), s2 wrong
//          coll_allgather  s0 correct 0.8x (0.2), s1 compile_error, s2 crash
//          dp_layernorm..  s0 timeout, s1 correct 1.6x (0.4), s2 correct 1.0x (0.25)
//   beta   coll_allreduce  s0 correct 3.0x (0.9), s1 crash then again integrity_violation (the later counts)
//          coll_allgather  s0 wrong, s1 wrong
//   and a torn last line in task_1.jsonl. Quartiles (p25/p75 us, reference then candidate)
//   of the best three: beta allreduce s0 95/110, 30/40; alpha allgather s0 90/105,
//   120/140; alpha layernorm s1 100/100, 50/80; every other timing has none (IQR 0).
// tests/report/fixtures/cpu/gamma.jsonl (seed 777), run gamma: coll_allreduce s0 correct
//   5.0x on the CPU device, s1 correct 4.0x on CUDA with ranks sharing a GPU; coll_allgather
//   s0 wrong on the CPU device.
const std::string kCpuFixtures = std::string(PKB_SOURCE_DIR) + "/tests/report/fixtures/cpu";

struct Report {
  json j;
  std::string out, md, html;
};

Report run_report(const std::string& dir, std::vector<std::string> inputs = {kFixtures}) {
  Report r;
  std::vector<std::string> args = {"report"};
  args.insert(args.end(), inputs.begin(), inputs.end());
  for (std::string a : std::vector<std::string>{"--k", "1,2,3", "--json", dir + "/r.json", "--md", dir + "/r.md",
                                                 "--html", dir + "/r.html"})
    args.push_back(a);
  PkbRun p = run_pkb(args);
  EXPECT_EQ(p.code, 0) << p.err;
  r.out = p.out;
  r.j = json::parse(slurp(dir + "/r.json"));
  r.md = slurp(dir + "/r.md");
  r.html = slurp(dir + "/r.html");
  return r;
}

const json& run_named(const json& report, const std::string& name) {
  for (auto& r : report["runs"])
    if (r["run"] == name) return r;
  throw std::runtime_error("no run " + name);
}

}  // namespace

TEST(Report, MergesTaskFilesAndSkipsWhatIsNotAResult) {
  std::string dir = temp_dir("report-merge");
  Report r = run_report(dir);
  EXPECT_EQ(r.j["files"].size(), 2u);  // task_0.jsonl, task_1.jsonl; not the Slurm log
  EXPECT_EQ(r.j["evaluations"], 13);    // 9 + 5, one of them repeated
  EXPECT_EQ(r.j["duplicates"], 1);
  EXPECT_EQ(r.j["skipped_lines"], 1);   // the torn line
}

TEST(Report, PerRunNumbersMatchTheHandComputedOnes) {
  std::string dir = temp_dir("report-runs");
  json rep = run_report(dir).j;
  const json& a = run_named(rep, "alpha");
  EXPECT_EQ(a["evaluations"], 9);
  EXPECT_EQ(a["problems"], 3);
  EXPECT_NEAR(a["compiled"].get<double>(), 8.0 / 9, 1e-12);   // all but one compile_error
  EXPECT_NEAR(a["correct"].get<double>(), 5.0 / 9, 1e-12);
  EXPECT_NEAR(a["fast"]["1"].get<double>(), 3.0 / 9, 1e-12);  // 2.5, 1.2, 1.6 (1.0 is not faster)
  EXPECT_NEAR(a["fast"]["1.5"].get<double>(), 2.0 / 9, 1e-12);
  EXPECT_NEAR(a["fast"]["2"].get<double>(), 1.0 / 9, 1e-12);
  EXPECT_NEAR(a["geomean_speedup"].get<double>(), std::pow(2.5 * 1.2 * 0.8 * 1.6 * 1.0, 1.0 / 5), 1e-9);
  EXPECT_NEAR(a["mean_roofline_fraction"].get<double>(), (0.5 + 0.3 + 0.2 + 0.4 + 0.25) / 5, 1e-12);
  // pass@k per problem (n = 3; c = 2, 1, 2), averaged: k=1 c/n; k=2 1 - C(n-c,2)/C(3,2).
  EXPECT_NEAR(a["pass_at_k"]["1"].get<double>(), (2.0 / 3 + 1.0 / 3 + 2.0 / 3) / 3, 1e-12);
  EXPECT_NEAR(a["pass_at_k"]["2"].get<double>(), (1 + (1 - 1.0 / 3) + 1) / 3, 1e-12);
  EXPECT_NEAR(a["pass_at_k"]["3"].get<double>(), 1.0, 1e-12);
  // fast_1@k: c = 2, 0, 1.  fast_2@k: c = 1, 0, 0.
  EXPECT_NEAR(a["fast_at_k"]["1"]["1"].get<double>(), (2.0 / 3 + 0 + 1.0 / 3) / 3, 1e-12);
  EXPECT_NEAR(a["fast_at_k"]["1"]["2"].get<double>(), (1 + 0 + 2.0 / 3) / 3, 1e-12);
  EXPECT_NEAR(a["fast_at_k"]["2"]["1"].get<double>(), (1.0 / 3) / 3, 1e-12);
  EXPECT_NEAR(a["fast_at_k"]["2"]["2"].get<double>(), (2.0 / 3) / 3, 1e-12);

  const json& b = run_named(rep, "beta");
  EXPECT_EQ(b["evaluations"], 4);
  EXPECT_EQ(b["verdicts"]["integrity_violation"], 1);  // the later of the repeated lines
  EXPECT_FALSE(b["verdicts"].contains("crash"));
  EXPECT_NEAR(b["correct"].get<double>(), 0.25, 1e-12);
  EXPECT_NEAR(b["geomean_speedup"].get<double>(), 3.0, 1e-12);
  EXPECT_NEAR(b["pass_at_k"]["1"].get<double>(), (0.5 + 0) / 2, 1e-12);
  EXPECT_NEAR(b["pass_at_k"]["2"].get<double>(), (1 + 0) / 2.0, 1e-12);
  EXPECT_TRUE(b["pass_at_k"]["3"].is_null()) << "two samples per problem: pass@3 is undefined";
}

TEST(Report, CategoriesAndBestCandidates) {
  std::string dir = temp_dir("report-best");
  json rep = run_report(dir).j;
  ASSERT_EQ(rep["categories"].size(), 3u);  // coll/beta, coll/alpha (the runs' rank order), dp/alpha
  EXPECT_EQ(rep["categories"][0]["run"], "beta");
  const json& coll_alpha = rep["categories"][1];
  EXPECT_EQ(coll_alpha["category"], "coll");
  EXPECT_EQ(coll_alpha["run"], "alpha");
  EXPECT_NEAR(coll_alpha["correct"].get<double>(), 3.0 / 6, 1e-12);
  EXPECT_NEAR(coll_alpha["geomean_speedup"].get<double>(), std::cbrt(2.5 * 1.2 * 0.8), 1e-9);
  EXPECT_EQ(rep["categories"][2]["category"], "dp");
  EXPECT_NEAR(rep["categories"][2]["correct"].get<double>(), 2.0 / 3, 1e-12);

  ASSERT_EQ(rep["best"].size(), 3u);  // by problem id: allreduce (1), allgather (2), layernorm (9)
  const json& allreduce = rep["best"][0];
  EXPECT_EQ(allreduce["problem"], "coll_allreduce");
  EXPECT_EQ(allreduce["evaluated"], 5);
  EXPECT_EQ(allreduce["correct"], 3);
  EXPECT_EQ(allreduce["best"]["run"], "beta");
  EXPECT_EQ(allreduce["best"]["backend"], "cuda");
  EXPECT_DOUBLE_EQ(allreduce["best"]["speedup"].get<double>(), 3.0);
  EXPECT_EQ(rep["best"][1]["best"]["path"], "solutions_cuda/alpha/coll_allgather/sample_0.cu");
  EXPECT_EQ(rep["best"][2]["best"]["sample"], 1);  // 1.6x beats sample 2's 1.0x
}

TEST(Report, MarkdownAndTerminalTables) {
  std::string dir = temp_dir("report-md");
  Report r = run_report(dir);
  EXPECT_TRUE(contains(r.md, "| 1 | beta | cuda | 2 | 4 | 100.0% | 25.0% | 25.0% | 25.0% | 25.0% | 3.00x | 90.0% | 1 |"))
      << r.md;
  EXPECT_TRUE(contains(r.md, "| alpha | 3 | 55.6% | 88.9% | 100.0% |")) << r.md;
  EXPECT_TRUE(contains(r.md, "### dp: Data Parallel")) << r.md;
  EXPECT_TRUE(contains(r.out, "2  alpha  cuda            3            9     88.9%    55.6%   33.3%     22.2%   11.1%")) << r.out;
}

TEST(Report, HtmlNeedsNothingFromTheNetwork) {
  std::string dir = temp_dir("report-html");
  std::string html = run_report(dir).html;
  EXPECT_TRUE(contains(html, "<svg")) << html;
  for (const char* outside : {"<script", "src=", "url(", "@import", "href=\"http", "href=\"//"})
    EXPECT_FALSE(contains(html, outside)) << "the page refers outside itself: " << outside;
}

// The header says what the results were run with; results that agree raise no warning.
TEST(Report, HeaderSaysWhatTheResultsWereRunWith) {
  std::string dir = temp_dir("report-header");
  Report r = run_report(dir);
  for (const char* line : {"  software: pkb 0.1.0 (commit 0123456789ab)\n", "  device: cuda (NVIDIA H100 80GB HBM3)\n",
                           "  hardware profile: h100_4\n", "  W: 4\n", "  size: default\n", "  dtype: bf16\n",
                           "  seed: 12345\n", "  trials, warmup, iters: trials 5, warmup 10, iters 10\n",
                           "  evaluated: 2026-11-30T10:00:00Z to 2026-11-30T10:13:00Z\n", "  report made: "})
    EXPECT_TRUE(contains(r.out, line)) << "missing '" << line << "' in\n" << r.out;
  EXPECT_TRUE(contains(r.md, "- **seed**: 12345\n")) << r.md;
  EXPECT_TRUE(contains(r.html, "<section class=\"header\">\n<h1>pkb report</h1>\n<dl>")) << r.html;
  EXPECT_TRUE(contains(r.html, "<dt>seed</dt><dd>12345</dd>")) << r.html;
  EXPECT_FALSE(contains(r.out, "Warnings")) << r.out;
  EXPECT_TRUE(r.j["warnings"].empty()) << r.j["warnings"];
  EXPECT_EQ(r.j["header"]["seeds"], json::array({"12345"}));
}

// Every speedup shows its spread: its recorded 95% interval, else (these fixtures predate it)
// ~[reference Q1 / candidate Q3, reference Q3 / candidate Q1].
TEST(Report, SpreadBesideEverySpeedup) {
  std::string dir = temp_dir("report-spread");
  Report r = run_report(dir);
  const json& best = r.j["best"][0]["best"];  // beta's coll_allreduce s0: 3.0x
  EXPECT_NEAR(best["speedup_low"].get<double>(), 95.0 / 40, 1e-9);
  EXPECT_NEAR(best["speedup_high"].get<double>(), 110.0 / 30, 1e-9);
  EXPECT_TRUE(contains(r.md, "| 3.00x | ~[2.38-3.67] |")) << r.md;
  EXPECT_TRUE(contains(r.md, "| 0.80x | ~[0.64-0.88] |")) << r.md;
  EXPECT_TRUE(contains(r.md, "| 1.60x | ~[1.25-2.00] |")) << r.md;
  EXPECT_TRUE(contains(r.html, "3.00x ~[2.38-3.67]  beta s0</text>")) << "the chart's label names the run";
}

// A result with its recorded interval (pkb eval's speedup_interval) shows that interval, not
// the quartile spread; the note says how fast_p treats an interval that straddles p.
TEST(Report, TheRecordedIntervalBesideTheSpeedup) {
  std::string dir = temp_dir("report-interval");
  std::ofstream out(dir + "/with_intervals.jsonl");
  for (auto task : {"/task_0.jsonl", "/task_1.jsonl"}) {
    std::ifstream in(kFixtures + task);
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded()) continue;  // the fixtures' torn line
      if (j.value("speedup", json()).is_number())
        j["speedup_interval"] = {{"lo", j["speedup"].get<double>() * 0.97}, {"hi", j["speedup"].get<double>() * 1.04},
                                 {"level", 0.95}, {"method", "bootstrap"}};
      out << j.dump() << "\n";
    }
  }
  out.close();
  Report r = run_report(dir, {dir + "/with_intervals.jsonl"});
  EXPECT_TRUE(contains(r.md, "3.00x [2.91-3.12]")) << r.md;
  EXPECT_FALSE(contains(r.md, "3.00x ~[")) << r.md;
  EXPECT_TRUE(contains(r.md, "a speedup above p counts even where its 95% interval reaches below p")) << r.md;
}

// Problems down, runs across; then every failure with its verdict, message and sample.
TEST(Report, ProblemByRunTableAndFailures) {
  std::string dir = temp_dir("report-matrix");
  Report r = run_report(dir);
  EXPECT_TRUE(contains(r.md, "| problem | W | size | beta | alpha |\n")) << "runs in rank order: " << r.md;
  EXPECT_TRUE(contains(r.md, "| coll_allreduce | 4 | default | 1/2 3.00x ~[2.38-3.67] | 2/3 2.50x ~[2.50-2.50] |"))
      << r.md;
  EXPECT_TRUE(contains(r.md, "| coll_allgather | 4 | default | 0/2 | 1/3 0.80x ~[0.64-0.88] |")) << r.md;
  EXPECT_TRUE(contains(r.md, "| dp_layernorm_bwd_allreduce | 4 | default | - | 2/3 1.60x ~[1.25-2.00] |")) << r.md;
  ASSERT_EQ(r.j["failures"].size(), 7u);
  EXPECT_EQ(r.j["failures"][0]["verdict"], "wrong");  // alpha's coll_allreduce s2 comes first
  EXPECT_EQ(r.j["failures"][0]["path"], "solutions_cuda/alpha/coll_allreduce/sample_2.cu");
  EXPECT_TRUE(contains(r.md, "| coll_allreduce | 4 | default | beta | 1 | integrity_violation | integrity_violation "
                             "(fixture) | solutions_cuda/beta/coll_allreduce/sample_1.cu |"))
      << r.md;
  EXPECT_TRUE(contains(r.out, "\nFailures\n")) << r.out;
}

// The terminal shows a large sweep's first 40 failures; the files list every one.
TEST(Report, TheTerminalShowsSomeFailuresTheFilesAll) {
  std::string dir = temp_dir("report-many");
  std::string text = slurp(kCpuFixtures + "/gamma.jsonl");
  json wrong = json::parse(text.substr(text.rfind('\n', text.size() - 2) + 1));  // coll_allgather, wrong
  wrong.erase("sweep");  // no sweep key: none is a repeat of another
  {
    std::ofstream f(dir + "/many.jsonl");
    for (int i = 0; i < 45; ++i) f << wrong.dump() << "\n";
  }
  PkbRun p = run_pkb({"report", dir + "/many.jsonl", "--md", dir + "/r.md"});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_TRUE(contains(p.out, "  ! 5 more failures: pkb report --md or --html lists them all\n")) << p.out;
  std::string md = slurp(dir + "/r.md");
  size_t rows = 0;
  for (size_t at = 0; (at = md.find("| wrong | wrong (fixture) |", at)) != std::string::npos; ++at) ++rows;
  EXPECT_EQ(rows, 45u);
}

// CPU-device timings and ranks sharing a GPU say nothing about speed: such candidates are
// correct, never fast, never best; results that mix seeds and devices say so.
TEST(Report, CpuDeviceAndSharedGpuTimingsNeverCount) {
  std::string dir = temp_dir("report-cpu");
  Report r = run_report(dir, {kFixtures, kCpuFixtures});
  const json& g = run_named(r.j, "gamma");
  EXPECT_EQ(g["evaluations"], 3);
  EXPECT_EQ(g["counts"]["correct"], 2);
  EXPECT_EQ(g["counts"]["timed"], 0);
  EXPECT_EQ(g["counts"]["not_meaningful"], 2);
  EXPECT_EQ(g["counts"]["fast"]["1"], 0) << "5.0x on the CPU device is not fast";
  EXPECT_TRUE(g["geomean_speedup"].is_null());
  EXPECT_TRUE(g["mean_roofline_fraction"].is_null());
  EXPECT_NEAR(g["fast_at_k"]["1"]["1"].get<double>(), 0.0, 1e-12);
  EXPECT_NEAR(g["pass_at_k"]["1"].get<double>(), (1.0 + 0.0) / 2, 1e-12);
  // The CUDA runs' numbers are unchanged, and the best allreduce is still beta's 3.0x.
  EXPECT_NEAR(run_named(r.j, "alpha")["fast"]["1"].get<double>(), 3.0 / 9, 1e-12);
  EXPECT_EQ(r.j["best"][0]["best"]["run"], "beta");
  EXPECT_DOUBLE_EQ(r.j["best"][0]["best"]["speedup"].get<double>(), 3.0);
  EXPECT_TRUE(contains(r.md, "| coll_allreduce | 4 | default | 1/2 3.00x ~[2.38-3.67] | 2/3 2.50x ~[2.50-2.50] | 2/2 "
                             "(CPU device, shared GPU) |"))
      << r.md;
  std::string warnings = r.j["warnings"].dump();
  EXPECT_TRUE(contains(warnings, "the results mix 2 seeds (12345, 777)")) << warnings;
  EXPECT_TRUE(contains(warnings, "the results mix devices (cpu, cuda)")) << warnings;
  EXPECT_TRUE(contains(warnings, "1 correct evaluation with timings that say nothing about speed (CPU device)"))
      << warnings;
  EXPECT_TRUE(contains(warnings, "(shared GPU)")) << warnings;
  EXPECT_TRUE(contains(r.out, "\nWarnings\n  ! the results mix 2 seeds")) << r.out;
  EXPECT_TRUE(contains(r.html, "<section class=\"warnings\">")) << r.html;
}

// Paths are shown relative to the results file's folder and linked from the page; the
// runs' generation manifests are totalled (tokens, latency, cost, answers without code).
TEST(Report, PathsRelativeToTheResultsFileAndGenerationTotals) {
  namespace fs = std::filesystem;
  std::string dir = temp_dir("report-paths");
  std::string run_dir = dir + "/solutions_cpu/r1";
  fs::create_directories(run_dir + "/coll_allreduce");
  fs::create_directories(dir + "/results");
  fs::create_directories(dir + "/pages");
  for (int k : {0, 1}) std::ofstream(run_dir + "/coll_allreduce/sample_" + std::to_string(k) + ".cpp") << "// x\n";
  auto line = [&](int k, const std::string& verdict) {
    json j = json::parse(slurp(kCpuFixtures + "/gamma.jsonl").substr(0, slurp(kCpuFixtures + "/gamma.jsonl").find('\n')));
    std::string path = run_dir + "/coll_allreduce/sample_" + std::to_string(k) + ".cpp";
    j["candidate"]["path"] = "solutions_cpu/r1/coll_allreduce/sample_" + std::to_string(k) + ".cpp";
    j["candidate"]["abs_path"] = path;
    j["candidate"]["sha256"] = "s" + std::to_string(k);
    j["verdict"] = verdict;
    j["message"] = verdict + " here";
    j["sweep"] = {{"run", "r1"}, {"sample", k}, {"task", path}};
    return j.dump() + "\n";
  };
  std::ofstream(dir + "/results/results.jsonl") << line(0, "correct") << line(1, "wrong");
  std::ofstream(run_dir + "/manifest.jsonl")
      << R"({"run":"r1","status":"ok","tokens_in":100,"tokens_out":50,"latency_s":2.0,"cost_usd":0.01})" << "\n"
      << R"({"run":"r1","status":"no_code","tokens_in":80,"tokens_out":40,"latency_s":1.0,"cost_usd":0.02})" << "\n"
      << R"({"run":"r1","status":"failed","tokens_in":0,"tokens_out":0,"latency_s":0.5,"cost_usd":null})" << "\n";
  PkbRun p = run_pkb({"report", dir + "/results/results.jsonl", "--json", dir + "/r.json", "--md", dir + "/r.md",
                      "--html", dir + "/pages/r.html"});
  ASSERT_EQ(p.code, 0) << p.err;
  json j = json::parse(slurp(dir + "/r.json"));
  ASSERT_EQ(j["failures"].size(), 1u);
  EXPECT_EQ(j["failures"][0]["shown_path"], "../solutions_cpu/r1/coll_allreduce/sample_1.cpp");
  EXPECT_EQ(j["best"][0]["correct_uncounted"]["shown_path"], "../solutions_cpu/r1/coll_allreduce/sample_0.cpp");
  std::string html = slurp(dir + "/pages/r.html");
  EXPECT_TRUE(contains(html, "<a href=\"../solutions_cpu/r1/coll_allreduce/sample_1.cpp\">")) << html;
  ASSERT_EQ(j["generation"].size(), 1u);
  const json& g = j["generation"][0];
  EXPECT_EQ(g["run"], "r1");
  EXPECT_EQ(g["requests"], 3);
  EXPECT_EQ(g["ok"], 1);
  EXPECT_EQ(g["no_code"], 1);
  EXPECT_EQ(g["failed"], 1);
  EXPECT_EQ(g["tokens_in"], 180);
  EXPECT_EQ(g["tokens_out"], 90);
  EXPECT_NEAR(g["latency_s"].get<double>(), 3.5, 1e-9);
  EXPECT_NEAR(g["cost_usd"].get<double>(), 0.03, 1e-9);
  EXPECT_EQ(g["manifest"], "../solutions_cpu/r1/manifest.jsonl");
  EXPECT_TRUE(contains(slurp(dir + "/r.md"), "| r1 | 3 | 1 | 1 | 1 | 180 | 90 | 1.2 | 0.03 (2 priced) |"))
      << slurp(dir + "/r.md");
}

TEST(Report, BadInputGetsOneErrorLine) {
  PkbRun r = run_pkb({"report", "/nonexistent/results.jsonl"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: /nonexistent/results.jsonl: no such results file or folder")) << r.err;
  std::string dir = temp_dir("report-empty");
  std::ofstream(dir + "/other.jsonl") << "{\"schema\": \"something/2\"}\n";
  r = run_pkb({"report", dir + "/other.jsonl"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "no pkb.eval/1 result in")) << r.err;
  r = run_pkb({"report", kFixtures, "--html", "/nonexistent/dir/r.html"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "cannot write /nonexistent/dir/r.html")) << r.err;
}

// The first line of a fixture file as JSON.
json fixture_line(const std::string& file, int index = 0) {
  std::stringstream lines(slurp(file));
  std::string line;
  for (int i = 0; i <= index; ++i) std::getline(lines, line);
  return json::parse(line);
}

// pkb eval --json writes one object over many lines; pkb report reads that file as it is.
TEST(Report, ReadsTheFilePkbEvalJsonWrites) {
  std::string dir = temp_dir("report-eval-json");
  json j = fixture_line(kFixtures + "/task_0.jsonl");
  j.erase("sweep");  // pkb eval's own file has no sweep key
  std::ofstream(dir + "/ar.json") << j.dump(2) << "\n";
  PkbRun p = run_pkb({"report", dir + "/ar.json", "--json", dir + "/r.json"});
  ASSERT_EQ(p.code, 0) << p.err;
  json rep = json::parse(slurp(dir + "/r.json"));
  EXPECT_EQ(rep["evaluations"], 1);
  EXPECT_EQ(rep["skipped_lines"], 0);
  EXPECT_TRUE(rep["skipped_files"].empty());
  EXPECT_EQ(rep["runs"][0]["run"], "alpha") << "outside a sweep the candidate's folder names the run";
  EXPECT_TRUE(contains(p.out, "1 evaluation from 1 file.")) << p.out;
}

// A folder holding both forms (and files that hold no result) is read whole; each file
// without a result is named once, with why, and never silently skipped.
TEST(Report, ReadsAFolderOfBothFormsAndNamesWhatHoldsNoResult) {
  std::string dir = temp_dir("report-mixed"), in = dir + "/in";
  std::filesystem::create_directories(in);
  json a = fixture_line(kFixtures + "/task_0.jsonl", 0), b = fixture_line(kFixtures + "/task_0.jsonl", 1);
  json c = fixture_line(kFixtures + "/task_1.jsonl", 0);
  std::ofstream(in + "/sweep.jsonl") << a.dump() << "\n" << b.dump() << "\n";
  c.erase("sweep");
  std::ofstream(in + "/eval.json") << c.dump(2) << "\n";
  std::ofstream(in + "/doctor.json") << "{\n  \"devices\": []\n}\n";
  std::ofstream(in + "/empty.jsonl") << "";
  PkbRun p = run_pkb({"report", in, "--json", dir + "/r.json", "--md", dir + "/r.md"});
  ASSERT_EQ(p.code, 0) << p.err;
  json rep = json::parse(slurp(dir + "/r.json"));
  EXPECT_EQ(rep["evaluations"], 3);
  EXPECT_EQ(rep["files"].size(), 2u);
  ASSERT_EQ(rep["skipped_files"].size(), 2u);
  EXPECT_TRUE(contains(p.err, "pkb: note: " + in + "/doctor.json holds no pkb.eval/1 result (it holds a JSON object "
                                                   "without a pkb.eval/1 schema); left out\n"))
      << p.err;
  EXPECT_TRUE(contains(p.err, in + "/empty.jsonl holds no pkb.eval/1 result (it is empty)")) << p.err;
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 2) << "one line a file: " << p.err;
  EXPECT_TRUE(contains(slurp(dir + "/r.md"), "- **left out**:\n  - " + in + "/doctor.json: it holds a JSON object"))
      << slurp(dir + "/r.md");

  // Nothing but such files: one error line saying why for each.
  std::filesystem::remove(in + "/sweep.jsonl");
  std::filesystem::remove(in + "/eval.json");
  p = run_pkb({"report", in});
  EXPECT_EQ(p.code, 2);
  EXPECT_TRUE(contains(p.err, "pkb: error: no pkb.eval/1 result in " + in + "/doctor.json: it holds a JSON object")) << p.err;
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
}

// The header says each thing once: the software from every result's "versions", seeds
// counted rather than listed (and not again in the warnings), each setting of trials,
// warmup and iters on a line of its own with how many evaluations ran with it.
TEST(Report, HeaderLinesAreCompact) {
  std::string dir = temp_dir("report-compact");
  json base = fixture_line(kFixtures + "/task_0.jsonl");
  base["versions"] = {{"pkb", "0.1.0"}, {"commit", "633f2cf"}, {"torch", "2.11.0+cu130"}, {"nccl", 22809},
                      {"cuda_runtime", 13000}, {"cuda_driver", 12080}};
  {
    std::ofstream f(dir + "/r.jsonl");
    for (int i = 0; i < 5; ++i) {
      json j = base;
      j["run"]["seed"] = std::to_string(1000 + i);
      j["sweep"]["task"] = "t" + std::to_string(i);
      if (i >= 3) j["run"]["trials"] = 100, j["run"]["warmup"] = 500, j["run"]["iters"] = 100;
      f << j.dump() << "\n";
    }
  }
  PkbRun p = run_pkb({"report", dir + "/r.jsonl"});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_TRUE(contains(p.out, "  software: pkb 0.1.0 (commit 633f2cf) · torch 2.11.0+cu130 · NCCL 2.28.9 · CUDA runtime "
                              "13.0 · driver 12.8\n"))
      << p.out;
  EXPECT_TRUE(contains(p.out, "  seed: 5 distinct seeds (pkb report --json lists them)\n")) << p.out;
  EXPECT_FALSE(contains(p.out, "1003")) << "no seed printed: " << p.out;
  EXPECT_TRUE(contains(p.out, "  trials, warmup, iters: trials 5, warmup 10, iters 10 (3 evaluations)\n"
                              "                         trials 100, warmup 500, iters 100 (2 evaluations)\n"))
      << p.out;
  EXPECT_TRUE(contains(p.out, "the results mix 5 seeds: their evaluations")) << p.out;
}

// A collective at W=1 times a local copy: the report warns and marks it; bus bandwidth for
// collectives and TFLOP/s (the spec's roofline flops over the candidate's median) for others.
TEST(Report, ThroughputColumnsAndCollectivesAtOneRank) {
  std::string dir = temp_dir("report-throughput");
  json coll = fixture_line(kFixtures + "/task_0.jsonl");  // coll_allreduce s0, 2.5x, candidate 40 us
  coll["run"]["world"] = 1;
  coll["busbw_gbps"] = {{"reference", 10.0}, {"candidate", 25.0}};
  json gemm = coll;
  gemm["problem"] = "tp_allgather_gemm";
  gemm["problem_id"] = 12;
  gemm["category"] = "tp";
  gemm["run"]["world"] = 4;
  gemm["busbw_gbps"] = nullptr;
  gemm["timing"]["candidate"]["median_us"] = 100.0;
  gemm["sweep"]["task"] = "gemm";
  std::ofstream(dir + "/r.jsonl") << coll.dump() << "\n" << gemm.dump() << "\n";
  PkbRun p = run_pkb({"report", dir + "/r.jsonl", "--json", dir + "/r.json", "--md", dir + "/r.md", "--html",
                      dir + "/r.html"});
  ASSERT_EQ(p.code, 0) << p.err;
  json rep = json::parse(slurp(dir + "/r.json"));
  ASSERT_EQ(rep["best"].size(), 2u);
  EXPECT_TRUE(rep["best"][0]["best"]["collective"].get<bool>());
  EXPECT_DOUBLE_EQ(rep["best"][0]["best"]["busbw_gbps"].get<double>(), 25.0);
  EXPECT_TRUE(rep["best"][0]["best"]["tflops"].is_null());
  // tp_allgather_gemm's flops: 2 * M * N * K = 2 * 1024 * 1024 * 512 over 100 us.
  EXPECT_NEAR(rep["best"][1]["best"]["tflops"].get<double>(), 2.0 * 1024 * 1024 * 512 / 100e-6 / 1e12, 1e-9);
  std::string md = slurp(dir + "/r.md");
  EXPECT_TRUE(contains(md, "| busbw GB/s | TFLOP/s | roofline |")) << md;
  EXPECT_TRUE(contains(md, "| 25.0 | - | 50.0% |")) << md;
  EXPECT_TRUE(contains(md, "| - | 10.7 | 50.0% |")) << md;
  std::string warnings = rep["warnings"].dump();
  EXPECT_TRUE(contains(warnings, "1 evaluation of a collective at W=1 (coll_allreduce): one rank communicates with no "
                                 "one, so these time a local copy"))
      << warnings;
  EXPECT_TRUE(contains(slurp(dir + "/r.html"), "coll_allreduce W=1 (no comm.)")) << "the chart marks it";
}

// Timings from a packed sweep (--parallel) count, with a warning that says how they were taken.
TEST(Report, TimingsFromAPackedSweepAreWarnedAbout) {
  std::string dir = temp_dir("report-parallel");
  json packed = fixture_line(kFixtures + "/task_0.jsonl");  // correct, timed, on CUDA
  packed["sweep"]["parallel"] = 4;
  json alone = fixture_line(kFixtures + "/task_0.jsonl", 1);
  std::ofstream(dir + "/r.jsonl") << packed.dump() << "\n" << alone.dump() << "\n";
  PkbRun p = run_pkb({"report", dir + "/r.jsonl", "--json", dir + "/r.json"});
  ASSERT_EQ(p.code, 0) << p.err;
  std::string warnings = json::parse(slurp(dir + "/r.json"))["warnings"].dump();
  EXPECT_TRUE(contains(warnings, "1 timing was taken beside other evaluations on the node (pkb sweep --parallel)"))
      << warnings;
}

// The leaderboard is ranked, and says how: geo-mean speedup, then fast_1, then correct.
TEST(Report, RunsAreRankedAndThePageSaysHow) {
  std::string dir = temp_dir("report-rank");
  Report r = run_report(dir, {kFixtures, kCpuFixtures});
  std::vector<std::string> order;
  for (auto& run : r.j["runs"]) order.push_back(run["run"]);
  EXPECT_EQ(order, (std::vector<std::string>{"beta", "alpha", "gamma"})) << "3.0x, 1.31x, then no counted timing";
  EXPECT_EQ(r.j["runs"][0]["rank"], 1);
  EXPECT_TRUE(contains(r.html, "Runs are ranked by geo-mean speedup over their correct candidates whose timing counts"))
      << r.html;
  EXPECT_TRUE(contains(r.md, "| # | run | backend | problems |")) << r.md;
  EXPECT_TRUE(contains(r.html, "No timing that counts for speed (ranked after, by fast_1 and correct): gamma.")) << r.html;
}

// The screenshot's bars against the report's own numbers: the leaderboard chart (each run's
// geo-mean speedup, in rank order) and the best speedup per problem, with its spread.
std::string expected_bars(const json& report) {
  json runs = json::array(), best = json::array(), spread = json::array();
  for (auto& r : report["runs"])
    if (r["geomean_speedup"].is_number())
      runs.push_back({r["geomean_speedup"].get<double>() >= 1 ? "faster" : "slower", r["geomean_speedup"]});
  bool spreads = true;
  for (auto& b : report["best"]) {
    if (b["best"].is_null()) continue;
    double v = b["best"]["speedup"];
    best.push_back({v >= 1 ? "faster" : "slower", v});
    spreads = spreads && b["best"]["speedup_low"].is_number();
    spread.push_back({b["best"]["speedup_low"], b["best"]["speedup_high"]});
  }
  json charts = json::array();
  if (!runs.empty()) charts.push_back({{"bars", runs}});
  if (!best.empty()) charts.push_back(spreads ? json{{"bars", best}, {"spread", spread}} : json{{"bars", best}});
  return charts.dump();
}

// The page as a person sees it: Chromium renders it, and the screenshot must show the
// header (its background, with text in it, above the charts), the leaderboard's bars (beta's
// 3.0x, then alpha's geo-mean) and the best speedup per problem (3.0x, 0.8x, 1.6x: blue when
// faster, amber when slower, on a log scale from the 1x line), each with its quartile range
// under it, and each stacked verdict bar with its correct share (3/6, 1/4, 2/3) in green.
TEST(Report, HtmlChartsRenderInHeadlessChromium) {
  std::string chromium = chromium_or_skip();
  NEED_CHROMIUM(chromium);
  std::string dir = temp_dir("report-shot");
  run_report(dir);
  std::string shot = dir + "/shot.png";
  auto c = pkb::launch::run_process({chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                     "--screenshot=" + shot, "--window-size=1366,1800", "file://" + dir + "/r.html"},
                                    120, {{"HOME", dir}});
  ASSERT_TRUE(std::filesystem::exists(shot)) << "chromium wrote no screenshot: " << c.err;
  double alpha = std::pow(2.5 * 1.2 * 0.8 * 1.6 * 1.0, 1.0 / 5);
  std::ofstream(dir + "/expect.json") << R"({
    "colours": {"faster": "#2563eb", "slower": "#f59e0b", "correct": "#16a34a", "wrong": "#dc2626",
                "integrity": "#7c3aed", "compile_error": "#9ca3af", "crash": "#92400e", "timeout": "#db2777",
                "spread": "#0f766e", "header": "#eef2ff"},
    "header": true,
    "charts": [{"bars": [["faster", 3.0], ["faster", )" << alpha << R"(]]},
               {"bars": [["faster", 3.0], ["slower", 0.8], ["faster", 1.6]],
                "spread": [[2.375, 3.6667], [0.6429, 0.875], [1.25, 2.0]]}],
    "stack": ["correct", "wrong", "integrity", "compile_error", "crash", "timeout"],
    "verdicts": [["correct", 0.25], ["correct", 0.5], ["correct", 0.6667]]})";
  auto check = pkb::launch::run_process(
      {PKB_PYTHON, std::string(PKB_SOURCE_DIR) + "/tests/report/check_screenshot.py", shot, dir + "/expect.json"}, 300);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  expect_layout_fits(chromium, dir + "/r.html");
}

// The two reports whose screenshots are in docs/: a real CPU-device sweep (its results
// committed in tests/report/fixtures/cpu_sweep) and the H200 runs in bench/results. Each
// renders in Chromium, fits a 1366 px screen, and draws its bars as its numbers say.
void expect_real_report_renders(const std::vector<std::string>& inputs, const std::string& name) {
  std::string chromium = chromium_or_skip();
  NEED_CHROMIUM(chromium);
  std::string dir = temp_dir("report-" + name);
  std::vector<std::string> args = {"report"};
  args.insert(args.end(), inputs.begin(), inputs.end());
  for (std::string a : {std::string("--json"), dir + "/r.json", std::string("--html"), dir + "/r.html"}) args.push_back(a);
  PkbRun p = run_pkb(args);
  ASSERT_EQ(p.code, 0) << p.err;
  json rep = json::parse(slurp(dir + "/r.json"));
  std::string shot = dir + "/shot.png";
  expect_layout_fits(chromium, dir + "/r.html", shot);
  ASSERT_TRUE(std::filesystem::exists(shot));
  std::ofstream(dir + "/expect.json") << R"({
    "colours": {"faster": "#2563eb", "slower": "#f59e0b", "spread": "#0f766e", "header": "#eef2ff"},
    "header": true, "min_bar": 3, "charts": )" << expected_bars(rep) << R"(, "stack": [], "verdicts": []})";
  auto check = pkb::launch::run_process(
      {PKB_PYTHON, std::string(PKB_SOURCE_DIR) + "/tests/report/check_screenshot.py", shot, dir + "/expect.json"}, 600);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST(Report, CpuSweepReportRendersInChromium) {
  expect_real_report_renders({std::string(PKB_SOURCE_DIR) + "/tests/report/fixtures/cpu_sweep"}, "cpu-sweep");
}

TEST(Report, H200ResultsReportRendersInChromium) {
  std::string results = std::string(PKB_SOURCE_DIR) + "/bench/results/";
  expect_real_report_renders({results + "h200-2026-12-01/results.jsonl", results + "h200-2026-11-29/results.jsonl"},
                             "h200");
}
