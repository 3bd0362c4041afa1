// `pkb agent` end to end: the real binary against the fake provider (tests/gen/
// fake_llm_server.py) scripted turn by turn, each candidate evaluated by a real `pkb eval`
// of coll_allreduce on the CPU device at W=2 with few trials: a model that fixes a compile
// error and then a wrong answer, one that never answers with code, one whose candidate
// hangs, and a run killed mid-turn and resumed.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../gen/fake_server.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace pkbtest;
using json = nlohmann::json;

namespace {

const char* kKey = "sk-agent-SECRET-77";
const std::string kRun = "openai_fake-model_cpu_dt_none_zero_shot_agent";

std::vector<std::pair<std::string, std::string>> env_for(const FakeServer& s) {
  return {{"PKB_OPENAI_BASE_URL", s.url("/v1")}, {"OPENAI_API_KEY", kKey}};
}

// An answer holding a file of the repository as the candidate.
json answer_with(const std::string& file, const std::string& prose = "Here is my candidate.") {
  return {{"reply", prose + "\n\n```cpp\n" + slurp(kSrc + "/" + file) + "```\n"}};
}

std::vector<std::string> agent_args(const std::string& out, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"agent",    "--model",  "openai:fake-model", "--problem", "coll_allreduce",
                                "--backend", "cpu",     "--shots",           "zero_shot", "--hardware",
                                "none",     "-w",       "2",                 "--trials",  "2",
                                "--warmup", "1",        "--iters",           "2",         "--retry-delay",
                                "0.01",     "--output-dir", out};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::string sample_dir(const std::string& out) { return out + "/solutions_cpu/" + kRun + "/coll_allreduce/sample_0"; }

std::vector<json> results(const std::string& out) {
  std::vector<json> lines;
  std::ifstream f(out + "/solutions_cpu/" + kRun + "/results.jsonl");
  for (std::string line; std::getline(f, line);) lines.push_back(json::parse(line));
  return lines;
}

std::string everything_sent(const FakeServer& s) {
  std::string all;
  for (auto& r : s.requests()) all += r.dump();
  return all;
}

}  // namespace

TEST(Agent, FixesACompileErrorThenAWrongAnswerFromTheFeedback) {
  // README.md's example: the script of a model that needs three turns.
  FakeServer server(kKey, json::parse(slurp(kSrc + "/tests/agent/demo_script.json")));
  std::string out = temp_dir("agent-fix");
  PkbRun r = run_pkb(agent_args(out, {"--turns", "5", "--until-speedup", "0"}), 300, env_for(server));
  ASSERT_EQ(r.code, 0) << r.out << r.err;

  auto log = server.requests();
  ASSERT_EQ(log.size(), 3u) << "it stops at the first correct candidate";
  EXPECT_EQ(log[0]["turn"], 1);
  EXPECT_TRUE(contains(log[0]["last_user"], "## How this session works")) << "the intro follows the prompt";
  EXPECT_TRUE(contains(log[0]["last_user"], "pkb problem `coll_allreduce`"));
  // Turn 2 gets the compiler's words, with the candidate's name and not pkb's paths.
  std::string fb1 = log[1]["last_user"];
  EXPECT_TRUE(contains(fb1, "## Turn 1 of 5: compile_error")) << fb1;
  EXPECT_TRUE(contains(fb1, "candidate.cpp:45:5: error: expected")) << fb1;
  EXPECT_FALSE(contains(fb1, out)) << "no path of pkb's files: " << fb1;
  // Turn 3 gets the wrong answer's rank, output, trial and first bad index.
  std::string fb2 = log[2]["last_user"];
  EXPECT_TRUE(contains(fb2, "## Turn 2 of 5: wrong")) << fb2;
  EXPECT_TRUE(contains(fb2, "- output: y")) << fb2;
  EXPECT_TRUE(contains(fb2, "- first bad index: [")) << fb2;
  EXPECT_TRUE(contains(fb2, "- trial: 0")) << fb2;
  EXPECT_EQ(log[2]["turn"], 3);
  EXPECT_TRUE(contains(slurp(sample_dir(out) + "/turn_3/feedback.txt"), "Your candidate is correct"));

  // One results line per evaluated turn, as pkb sweep records them, plus the turn.
  auto lines = results(out);
  ASSERT_EQ(lines.size(), 3u);
  std::vector<std::string> verdicts;
  for (size_t i = 0; i < lines.size(); ++i) {
    verdicts.push_back(lines[i]["verdict"]);
    EXPECT_EQ(lines[i]["schema"], "pkb.eval/1");
    EXPECT_EQ(lines[i]["agent"]["turn"], int(i) + 1);
    EXPECT_EQ(lines[i]["sweep"]["run"], kRun);
    EXPECT_EQ(lines[i]["sweep"]["sample"], 0);
    EXPECT_EQ(lines[i]["run"]["world"], 2);
    // The seed of each evaluation never reached the model.
    std::string seed = lines[i]["run"]["seed"];
    EXPECT_FALSE(contains(everything_sent(server), seed));
  }
  EXPECT_EQ(verdicts, (std::vector<std::string>{"compile_error", "wrong", "correct"}));

  // Every turn kept; the best correct candidate beside the sample's folder.
  for (int t = 1; t <= 3; ++t)
    for (std::string f : {"request.json", "response.json", "reply.txt", "candidate.cpp", "eval.json", "feedback.txt",
                          "turn.json"})
      EXPECT_TRUE(fs::exists(sample_dir(out) + "/turn_" + std::to_string(t) + "/" + f)) << t << " " << f;
  EXPECT_EQ(slurp(sample_dir(out) + ".cpp"), slurp(kSrc + "/solutions_cpu/coll_allreduce.cpp"));
  EXPECT_FALSE(contains(slurp(sample_dir(out) + "/turn_2/request.json"), kKey)) << "keys never land on disk";
  std::string transcript = slurp(sample_dir(out) + "/transcript.md");
  EXPECT_TRUE(contains(transcript, "## Turn 3: pkb's feedback\n\n~~~~text\n## Turn 3 of 5: correct")) << transcript;
  json sample = json::parse(slurp(sample_dir(out) + "/sample.json"));
  EXPECT_EQ(sample["best_turn"], 3);
  EXPECT_EQ(sample["turns"], 3);

  // pkb report: the sample counts once; by turn it converges at turn 3.
  PkbRun rep = run_pkb({"report", out + "/solutions_cpu/" + kRun + "/results.jsonl", "--k", "1", "--json",
                        out + "/report.json"});
  ASSERT_EQ(rep.code, 0) << rep.err;
  EXPECT_TRUE(contains(rep.out, "By turn (pkb agent)")) << rep.out;
  json j = json::parse(slurp(out + "/report.json"));
  EXPECT_EQ(j["runs"][0]["evaluations"], 1);
  EXPECT_EQ(j["runs"][0]["pass_at_k"]["1"], 1.0);
  ASSERT_EQ(j["turns"].size(), 3u);
  EXPECT_EQ(j["turns"][0]["pass_at_k"]["1"], 0.0);
  EXPECT_EQ(j["turns"][1]["pass_at_k"]["1"], 0.0);
  EXPECT_EQ(j["turns"][2]["pass_at_k"]["1"], 1.0);

  // The same command again: the sample is finished and asks nothing more.
  PkbRun again = run_pkb(agent_args(out, {"--turns", "5", "--until-speedup", "0"}), 60, env_for(server));
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(Agent, AModelThatNeverAnswersWithCodeGetsToolsThenCountsAsNoCode) {
  FakeServer server(kKey, {{"turns", {{"1", {{"reply", "SHOW"}}}, {"2", {{"reply", "Let me look at the shapes.\nSHAPES\n"}}}}},
                           {"default", {{"reply", "I would rather explain the algorithm in words."}}}});
  std::string out = temp_dir("agent-nocode");
  PkbRun r = run_pkb(agent_args(out, {"--turns", "3"}), 300, env_for(server));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto log = server.requests();
  ASSERT_EQ(log.size(), 3u);
  std::string shown = log[1]["last_user"];
  EXPECT_TRUE(contains(shown, "## Turn 1 of 3: SHOW")) << shown;
  EXPECT_TRUE(contains(shown, "# problems/coll_allreduce.toml")) << shown;
  EXPECT_TRUE(contains(shown, "# reference: reference/coll_allreduce.cpp")) << shown;
  EXPECT_TRUE(contains(shown, "ctx.comm().all_reduce_into(out[\"y\"], in[\"x\"])")) << shown;
  std::string shapes = log[2]["last_user"];
  EXPECT_TRUE(contains(shapes, "rank 0: y bf16[1024,1024]\nrank 1: y bf16[1024,1024]")) << shapes;
  EXPECT_FALSE(contains(shapes, "seed")) << shapes;
  std::string last = slurp(sample_dir(out) + "/turn_3/feedback.txt");
  EXPECT_TRUE(contains(last, "pkb found nothing to evaluate in your answer (no fenced code block in the answer)"))
      << last;

  // Nothing was evaluated, yet the sample counts: a compile error, as pkb generate scores it.
  auto lines = results(out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["verdict"], "compile_error");
  EXPECT_EQ(lines[0]["flags"], json::array({"no_code"}));
  EXPECT_EQ(lines[0]["agent"]["turn"], 3);
  EXPECT_EQ(slurp(sample_dir(out) + ".cpp").rfind("#error \"pkb agent: the model answered no code in 3 turn(s)", 0), 0u);
  EXPECT_FALSE(fs::exists(sample_dir(out) + "/turn_1/eval.json"));
}

TEST(Agent, ACandidateThatHangsARankCostsOnlyItsTurn) {
  FakeServer server(kKey, {{"turns", {{"1", answer_with("tests/candidates/cpu/hang.cpp")}, {"2", {{"reply", "DONE"}}}}}});
  std::string out = temp_dir("agent-hang");
  PkbRun r = run_pkb(agent_args(out, {"--turns", "4", "--timeout", "10"}), 300, env_for(server));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto log = server.requests();
  ASSERT_EQ(log.size(), 2u) << "DONE ends the sample before its turns run out";
  std::string fb = log[1]["last_user"];
  EXPECT_TRUE(contains(fb, "## Turn 1 of 4: timeout")) << fb;
  EXPECT_TRUE(contains(fb, "over 10 s in trial 0")) << "the phase that hung" << fb;
  EXPECT_TRUE(contains(fb, "rank 0: stopped by pkb, last phase trial 0")) << "each rank's state" << fb;
  auto lines = results(out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["verdict"], "timeout");
  EXPECT_EQ(json::parse(slurp(sample_dir(out) + "/sample.json"))["stopped"], "the model said DONE");
  EXPECT_TRUE(survivors(r.tag).empty()) << "no rank outlives its evaluation";
}

TEST(Agent, AKilledRunResumesWithoutRepeatingAFinishedTurn) {
  std::string out = temp_dir("agent-resume");
  {
    // Turn 1 is answered and evaluated; turn 2's request never gets an answer: kill pkb there.
    FakeServer stalls(kKey, {{"turns", {{"1", answer_with("tests/candidates/cpu/wrong_values.cpp")}, {"2", {{"stall", true}}}}},
                             {"stall_s", 60}});
    std::vector<std::string> argv = {PKB_BIN};
    for (auto& a : agent_args(out, {"--turns", "4", "--until-speedup", "0"})) argv.push_back(a);
    auto env = env_for(stalls);
    Child agent(argv, env, out + "/first.out", out + "/first.err");
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(240);
    while (stalls.requests().size() < 2) {
      ASSERT_LT(std::chrono::steady_clock::now(), until) << slurp(out + "/first.out") << slurp(out + "/first.err");
      ASSERT_EQ(agent.wait(0), -1) << "pkb agent ended early: " << slurp(out + "/first.err");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    agent.signal(SIGKILL);
    agent.wait(30);
  }
  ASSERT_TRUE(fs::exists(sample_dir(out) + "/turn_1/turn.json"));
  ASSERT_FALSE(fs::exists(sample_dir(out) + "/turn_2/turn.json"));
  auto turn1 = fs::last_write_time(sample_dir(out) + "/turn_1/turn.json");

  FakeServer answers(kKey, {{"turns", {{"2", answer_with("solutions_cpu/coll_allreduce.cpp")}}}});
  PkbRun r = run_pkb(agent_args(out, {"--turns", "4", "--until-speedup", "0"}), 300, env_for(answers));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto log = answers.requests();
  ASSERT_EQ(log.size(), 1u) << "turn 1 is never asked again";
  EXPECT_EQ(log[0]["turn"], 2);
  EXPECT_TRUE(contains(log[0]["last_user"], "## Turn 1 of 4: wrong")) << "the conversation goes on where it stopped";
  EXPECT_EQ(fs::last_write_time(sample_dir(out) + "/turn_1/turn.json"), turn1) << "nor evaluated again";
  auto lines = results(out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["verdict"], "wrong");
  EXPECT_EQ(lines[1]["verdict"], "correct");
  EXPECT_EQ(lines[1]["agent"]["turn"], 2);
}
