// pkb agent's parts without processes: what an answer asks for, the feedback's facts from
// pkb.eval/1 results (compiler errors trimmed, the failure, timing), what is scrubbed, the
// [agent] templates, and SHAPES from pkb dryrun's table.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "agent/book.hpp"
#include "agent/feedback.hpp"
#include "agent/tools.hpp"
#include "gen/error.hpp"
#include "spec/hardware.hpp"

using namespace pkb::agent;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A record as pkb eval writes it, from the fields a test names.
pkb::eval::Record record(json j) {
  j["schema"] = "pkb.eval/1";
  if (!j.contains("problem")) j["problem"] = "coll_allreduce";
  return pkb::eval::Record::from_json(j);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::vector<std::string> kTags = {"cpp", "c++"};

const char* kGccLog =
    "/tmp/x/turn_1/candidate.cpp: In function 'int pkb_run(pkb_ctx*)':\n"
    "/tmp/x/turn_1/candidate.cpp:45:5: error: expected ';' before 'for'\n"
    "   45 |     for (int p = 0; p < w; ++p)\n"
    "      |     ^~~\n"
    "/tmp/x/turn_1/candidate.cpp:45:21: error: 'p' was not declared in this scope\n"
    "   45 |     for (int p = 0; p < w; ++p)\n"
    "      |                     ^\n"
    "/tmp/x/turn_1/candidate.cpp:50:1: warning: unused variable 'q'\n"
    "/tmp/x/turn_1/candidate.cpp:51:2: error: third\n"
    "/tmp/x/turn_1/candidate.cpp:52:2: error: fourth\n"
    "   52 | junk\n";

}  // namespace

TEST(AgentRequest, CodeToolsAndDoneAreReadOutsideCodeBlocks) {
  Request r = read_request("Plan.\n\n```cpp\nint x;\nSHOW\n```\n\n`SHAPES`\nshow.\n**DONE**\n", kTags);
  EXPECT_TRUE(r.code.found);
  EXPECT_EQ(r.code.code, "int x;\nSHOW\n");
  EXPECT_EQ(r.tools, (std::vector<std::string>{kShapes, kShow})) << "in the order asked, case ignored";
  EXPECT_TRUE(r.done);

  r = read_request("I will SHOW you later. Not done yet.\nSHAPES\nSHAPES\n", kTags);
  EXPECT_FALSE(r.code.found);
  EXPECT_EQ(r.tools, (std::vector<std::string>{kShapes})) << "a word inside a sentence is no request; each tool once";
  EXPECT_FALSE(r.done);

  r = read_request("Nothing here.", kTags);
  EXPECT_FALSE(r.code.found);
  EXPECT_TRUE(r.tools.empty());
  EXPECT_EQ(r.code.why, "no fenced code block in the answer");
}

TEST(AgentFeedback, CompilerOutputIsCutToTheFirstErrors) {
  std::string e = first_errors(kGccLog, 2, 30);
  EXPECT_TRUE(has(e, "In function 'int pkb_run")) << "where the first error is\n" << e;
  EXPECT_TRUE(has(e, "45:5: error: expected ';'")) << e;
  EXPECT_TRUE(has(e, "45:21: error: 'p' was not declared")) << e;
  EXPECT_TRUE(has(e, "                     ^")) << "context lines stay with their error";
  EXPECT_FALSE(has(e, "third")) << e;
  EXPECT_TRUE(has(e, "more errors follow")) << e;

  e = first_errors(kGccLog, 10, 4);
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 5) << "4 lines and the note\n" << e;

  e = first_errors("x.cu(12): error: identifier \"foo\" is undefined\n\n1 error detected\n");
  EXPECT_TRUE(has(e, "x.cu(12): error: identifier")) << "nvcc's form too";
  EXPECT_FALSE(has(e, "more errors")) << e;
  EXPECT_EQ(first_errors("ld: cannot find -lfoo\n"), "ld: cannot find -lfoo\n") << "no error line: the start";
}

TEST(AgentFeedback, AWrongResultNamesRankOutputTrialAndFirstBadIndexButNotTheSeed) {
  json r = {{"verdict", "wrong"},
            {"message", "rank 1, output 'y', trial 3: 5 of 16 elements differ; first at [0, 2]: got 4, want 6."},
            {"run", {{"seed", "12345678901234"}, {"device", "cpu"}}},
            {"failure",
             {{"rank", 1}, {"output", "y"}, {"trial", 3}, {"phase", "trial"}, {"reason", "values"},
              {"bad_count", 5}, {"first_bad_index", {0, 2}}, {"max_abs_err", 2.0}, {"max_rel_err", 0.5},
              {"detail", "seed 12345678901234 leaked"}}}};
  Scrubber scrub;
  scrub.add("12345678901234", "<seed>");
  pkb::gen::Context v = result_values(record(r), "", scrub);
  EXPECT_EQ(verdict_template(record(r)), "wrong");
  EXPECT_EQ(v["message"], "rank 1, output 'y', trial 3: 5 of 16 elements differ; first at [0, 2]: got 4, want 6")
      << "the template ends the sentence";
  EXPECT_EQ(v["details"],
            "- rank: 1\n- output: y\n- trial: 3\n- reason: values\n- elements wrong: 5\n- first bad index: [0, 2]\n"
            "- largest error: 2 absolute, 0.5 relative");
  EXPECT_TRUE(v["compiler_errors"].empty());
  EXPECT_TRUE(v["timing"].empty());
  for (auto& [k, text] : v) EXPECT_FALSE(has(text, "12345678901234")) << k;

  json mutated = {{"verdict", "integrity_violation"},
                  {"message", "m"},
                  {"failure", {{"rank", 0}, {"output", "x"}, {"phase", "timing"}, {"reason", "input_mutated"}}}};
  EXPECT_EQ(failure_details(*record(mutated).failure), "- rank: 0\n- input: x\n- phase: timing\n- reason: input_mutated\n");
}

TEST(AgentFeedback, ACompileErrorQuotesTheCompilerWithoutPkbsPaths) {
  json r = {{"verdict", "compile_error"},
            {"message", "the candidate does not compile"},
            {"failure", {{"reason", "compile"}, {"detail", kGccLog}}}};
  Scrubber scrub;
  scrub.add("/tmp/x/turn_1/", "");
  scrub.add("/tmp/x", "<pkb>");  // shorter: applied after the longer one
  pkb::gen::Context v = result_values(record(r), "", scrub);
  EXPECT_EQ(verdict_template(record(r)), "compile_error");
  EXPECT_TRUE(has(v["compiler_errors"], "\ncandidate.cpp:45:5: error:")) << v["compiler_errors"];
  EXPECT_FALSE(has(v["compiler_errors"], "/tmp/x")) << v["compiler_errors"];
  EXPECT_TRUE(v["details"].empty());
}

TEST(AgentFeedback, CrashesAndTimeoutsQuoteWhatTheRanksPrinted) {
  std::string err = "pkb: crash: rank 1 was killed by signal 11\nrank 1 crashed\n  rank 0: stopped by pkb, last phase trial 0\n"
                    "  rank 1: signal 11 (Segmentation fault), last phase trial 0\n    | about to store\n";
  json r = {{"verdict", "crash"}, {"message", "rank 1 was killed by signal 11 (Segmentation fault) in trial 0"}};
  pkb::gen::Context v = result_values(record(r), err, Scrubber());
  EXPECT_EQ(v["rank_output"],
            "```\n  rank 0: stopped by pkb, last phase trial 0\n  rank 1: signal 11 (Segmentation fault), last phase "
            "trial 0\n    | about to store\n```");
  EXPECT_EQ(rank_output("nothing from ranks\n"), "");
  EXPECT_EQ(verdict_template(pkb::eval::Record{}), "crash") << "a record without a verdict is reported as a failure";
}

TEST(AgentFeedback, ACorrectResultGivesTimeSpeedupBandwidthAndRoofline) {
  json r = {{"verdict", "correct"},
            {"message", "100 trials on 4 ranks, timed calls checked"},
            {"run", {{"device", "cuda"}, {"hardware_profile", "h100_8"}, {"ranks_per_gpu", 1}}},
            {"timing", {{"candidate", {{"median_us", 50.0}, {"samples", 100}}}, {"reference", {{"median_us", 80.0}}}}},
            {"speedup", 1.6},
            {"busbw_gbps", {{"candidate", 300.0}, {"reference", 187.5}}},
            {"roofline", {{"fraction", 0.42}, {"bound_us", 21.0}, {"limiter", "nvlink"}}},
            {"flags", json::array()}};
  EXPECT_EQ(timing_text(record(r)),
            "- median time per call (100 timed calls, slowest rank): yours 50.0 us, the reference's 80.0 us\n"
            "- speedup: 1.60x\n"
            "- bus bandwidth: yours 300.0 GB/s, the reference's 187.5 GB/s\n"
            "- roofline: 42% of the h100_8 bound (21.0 us, limited by nvlink)\n");
  r["flags"] = {"shared_gpu"};
  EXPECT_TRUE(has(timing_text(record(r)), "- flags: shared_gpu\n- note: the flags put this timing in doubt"));
  r["run"]["device"] = "cpu";
  EXPECT_TRUE(has(timing_text(record(r)), "pkb's CPU device"));
  r["timing"] = nullptr;
  EXPECT_EQ(timing_text(record(r)), "Timing was off for this run.");
}

TEST(AgentFeedback, AScrubberReplacesLongestFirst) {
  Scrubber s;
  s.add("/a", "<pkb>");
  s.add("/a/b/turn_2/", "");
  s.add("", "never");
  EXPECT_EQ(s("/a/b/turn_2/candidate.cpp and /a/include and /a/b/turn_2/"), "candidate.cpp and <pkb>/include and ");
}

TEST(AgentBook, TheShippedTemplatesLoadAndBadOnesFailNamingTheKey) {
  std::string root = PKB_SOURCE_DIR;
  auto profiles = pkb::spec::load_profiles(root + "/hardware/profiles.toml");
  auto prompts = pkb::gen::PromptBook::load(root + "/prompts.toml", profiles);
  Book b = Book::from(prompts);
  pkb::gen::Context v;
  for (auto& name : template_values()) v[name] = "";
  v["turn"] = "2";
  v["turns"] = "5";
  v["outcome"] = "wrong";
  v["result"] = "RESULT";
  std::string text = b.render("feedback", v);
  EXPECT_EQ(text.rfind("## Turn 2 of 5: wrong\n\nRESULT\n\n", 0), 0u) << "empty values leave no holes:\n" << text;
  EXPECT_FALSE(has(text, "\n\n\n"));

  auto broken = prompts;
  broken.agent["wrong"] = "Wrong: {mesage}";
  try {
    Book::from(broken);
    ADD_FAILURE() << "an unknown placeholder loads";
  } catch (const pkb::gen::GenError& e) {
    EXPECT_TRUE(has(e.what(), "[agent] wrong uses unknown placeholder {mesage}")) << e.what();
  }
  broken = prompts;
  broken.agent.erase("shapes");
  try {
    Book::from(broken);
    ADD_FAILURE() << "a missing template loads";
  } catch (const pkb::gen::GenError& e) {
    EXPECT_TRUE(has(e.what(), "[agent] needs shapes")) << e.what();
  }
  broken = prompts;
  broken.agent["extra"] = "x";
  EXPECT_THROW(Book::from(broken), pkb::gen::GenError);
}

TEST(AgentTools, ShapesComeFromDryrunsTableWithoutItsHeader) {
  pkb::launch::ProcessResult r;
  r.exit_code = 0;
  r.out =
      "pkb dryrun coll_allreduce  W=2  device=cpu  comm=gloo  size=default  seed=987654321  trials=1\n"
      "rank  ms/trial   outputs\n0     1.234      y bf16[1024,1024]\n1     1.100      y bf16[1024,1024]\nok (1.2 s)\n";
  EXPECT_EQ(shapes_text(r), "rank 0: y bf16[1024,1024]\nrank 1: y bf16[1024,1024]\n");
  r.exit_code = 4;
  r.out = "pkb dryrun x seed=987654321\n";
  r.err = "crash: rank 0 died\n  rank 0: signal 11\n";
  std::string t = shapes_text(r);
  EXPECT_EQ(t, "pkb could not run the reference: crash: rank 0 died\n");
  EXPECT_FALSE(has(t, "987654321"));
}

TEST(AgentTools, EvalGetsTheSettingsAndNoSeed) {
  EvalSettings s;
  s.pkb = "pkb";
  s.global_args = {"--root", "/r"};
  s.device = "cpu";
  s.settings.trials = 2;
  s.settings.iters = 3;
  s.settings.timing = false;
  s.timeout = 1.5;
  auto a = eval_argv(s, "coll_allreduce", 2, "c.cpp", "e.json");
  EXPECT_EQ(a, (std::vector<std::string>{"pkb", "--root", "/r", "eval", "--problem", "coll_allreduce", "--solution",
                                         "c.cpp", "--world-size", "2", "--device", "cpu", "--trials", "2", "--iters",
                                         "3", "--no-timing", "--timeout", "1.5", "--json", "e.json"}));
  for (auto& x : dryrun_argv(s, "coll_allreduce", 2)) EXPECT_NE(x, "--seed");
}
