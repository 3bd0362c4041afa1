// `pkb generate` and `pkb prompt` end to end: the real binary against a fake provider on
// loopback. Files and manifest appear, a second run asks nothing, answers without code and
// with several blocks are handled, bad input fails in one line, keys never leak, and Ctrl-C
// keeps what finished.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "../runtime/support.hpp"
#include "fake_server.hpp"

namespace fs = std::filesystem;
using namespace pkbtest;
using json = nlohmann::json;

namespace {

const char* kGenerateKey = "sk-test-SECRET-4242";
const std::string kRun = "openai_fake-model_cuda_dt_h100_8_zero_shot";

// Sends gpt-style requests to the fake server through the models.toml's `openai` provider.
std::vector<std::pair<std::string, std::string>> env_for(const FakeServer& s) {
  return {{"PKB_OPENAI_BASE_URL", s.url("/v1")}, {"OPENAI_API_KEY", kGenerateKey}};
}

// 3 problems (by slug and by id) x 2 samples unless `more` says otherwise.
std::vector<std::string> generate_args(const std::string& out, std::vector<std::string> more = {},
                                       const std::string& problems = "coll_allreduce,coll_allgather,3",
                                       const std::string& samples = "2") {
  std::vector<std::string> a = {
      "generate", "--model", "openai:fake-model", "--problem",  problems, "--samples",    samples, "--backend",
      "cuda",     "--shots", "zero_shot",         "--hardware", "h100_8", "--output-dir", out,     "--retry-delay",
      "0.01"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::vector<json> manifest(const std::string& run_dir) {
  std::vector<json> lines;
  std::ifstream f(run_dir + "/manifest.jsonl");
  for (std::string line; std::getline(f, line);) lines.push_back(json::parse(line));
  return lines;
}

std::string everything_under(const std::string& dir) {
  std::string all;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) all += slurp(e.path().string());
  return all;
}

}  // namespace

TEST(GenCommand, WritesCandidatesResponsesAndAManifestThenResumesWithoutAsking) {
  FakeServer server(kGenerateKey);
  std::string out = temp_dir("gen-basic");
  PkbRun r = run_pkb(generate_args(out, {"--jobs", "3"}), 120, env_for(server));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(server.requests().size(), 6u);
  std::string run_dir = out + "/solutions_cuda/" + kRun;
  for (std::string slug : {"coll_allreduce", "coll_allgather", "coll_broadcast"}) {
    for (int k = 0; k < 2; ++k) {
      std::string base = run_dir + "/" + slug + "/sample_" + std::to_string(k);
      std::string code = slurp(base + ".cu");
      EXPECT_TRUE(contains(code, "for " + slug + "\n")) << base << ": " << code;
      EXPECT_TRUE(contains(code, "PKB_EXPORT int pkb_abi_version")) << code;
      EXPECT_FALSE(contains(code, "```")) << "the fence is not part of the code";
      EXPECT_TRUE(json::parse(slurp(base + ".response.json")).contains("choices")) << "the raw answer";
    }
  }
  auto lines = manifest(run_dir);
  ASSERT_EQ(lines.size(), 6u);
  for (auto& l : lines) {
    EXPECT_EQ(l["status"], "ok") << l;
    EXPECT_EQ(l["model"], "openai:fake-model");
    EXPECT_EQ(l["provider"], "openai");
    std::string prompt =
        run_dir + "/" + l["problem"].get<std::string>() + "/prompt-" + l["prompt_hash"].get<std::string>() + ".md";
    EXPECT_TRUE(contains(slurp(prompt), "# user\n\nWrite a CUDA C++ candidate")) << "the prompt asked, by its hash";
    EXPECT_GT(l["tokens_in"].get<int>(), 100);
    EXPECT_GT(l["tokens_out"].get<int>(), 0);
    EXPECT_EQ(l["finish_reason"], "stop");
    EXPECT_TRUE(l["error"].is_null());
    EXPECT_TRUE(l.contains("latency_s"));
    EXPECT_EQ(l["backend"], "cuda");
  }
  EXPECT_TRUE(contains(r.out, "6 ok, 0 without code, 0 failed, 0 already there")) << r.out;

  PkbRun again = run_pkb(generate_args(out), 120, env_for(server));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(server.requests().size(), 6u) << "a second run makes no request";
  EXPECT_TRUE(contains(again.out, "0 ok, 0 without code, 0 failed, 6 already there")) << again.out;
  EXPECT_EQ(manifest(run_dir).size(), 6u);

  PkbRun forced = run_pkb(generate_args(out, {"--force"}, "coll_allreduce", "1"), 120, env_for(server));
  ASSERT_EQ(forced.code, 0) << forced.err;
  EXPECT_EQ(server.requests().size(), 7u) << "--force asks again";
}

TEST(GenCommand, RecoversFromRateLimitsServerErrorsAndStallsUnattended) {
  FakeServer server(
      kGenerateKey, {{"stall_s", 30},
             {"queue",
              {{{"status", 429}, {"retry_after", 1}}, {{"status", 500}}, {{"stall", true}}, {{"malformed", true}}}}});
  std::string out = temp_dir("gen-flaky");
  PkbRun r = run_pkb(generate_args(out, {"--timeout", "2", "--jobs", "3"}), 120, env_for(server));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(server.requests().size(), 10u) << "6 answers after 4 scripted failures";
  int retried = 0;
  for (auto& l : manifest(out + "/solutions_cuda/" + kRun)) {
    EXPECT_EQ(l["status"], "ok") << l;
    retried += l["attempts"].get<int>() - 1;
  }
  EXPECT_EQ(retried, 4);
  EXPECT_TRUE(contains(r.err, "retrying in")) << r.err;
}

TEST(GenCommand, AnswersWithoutCodeOrWithSeveralBlocks) {
  std::string several =
      "Two helpers and the kernel.\n```python\n# a long python block that must not be chosen over the cuda one\n"
      "print('x' * 100)\n```\n```cuda\n__global__ void small() {}\n```\n```cuda\n__global__ void kernel() {}\n"
      "PKB_EXPORT int pkb_run() { return 0; }\n```\n";
  FakeServer server(kGenerateKey, {{"queue", {{{"reply", "Sorry, I will not write that."}}, {{"reply", several}}}}});
  std::string out = temp_dir("gen-blocks");
  PkbRun r = run_pkb(generate_args(out, {"--jobs", "1"}, "coll_allreduce"), 120, env_for(server));
  ASSERT_EQ(r.code, 0) << "an answer without code is the model's failure, not pkb's: " << r.err;
  std::string dir = out + "/solutions_cuda/" + kRun + "/coll_allreduce";
  // A sample without code becomes a file that cannot compile, naming why (a sweep scores it).
  EXPECT_TRUE(contains(slurp(dir + "/sample_0.cu"), "#error \"pkb generate: the model's answer held no code")) << dir;
  EXPECT_TRUE(contains(slurp(dir + "/sample_0.response.json"), "Sorry, I will not")) << "the raw answer is kept";
  EXPECT_EQ(slurp(dir + "/sample_1.cu"), "__global__ void kernel() {}\nPKB_EXPORT int pkb_run() { return 0; }\n");
  auto lines = manifest(out + "/solutions_cuda/" + kRun);
  ASSERT_EQ(lines.size(), 2u);
  json none = lines[0]["sample"] == 0 ? lines[0] : lines[1], picked = lines[0]["sample"] == 0 ? lines[1] : lines[0];
  EXPECT_EQ(none["status"], "no_code");
  EXPECT_EQ(none["error"], "no fenced code block in the answer");
  EXPECT_EQ(none["code"], "coll_allreduce/sample_0.cu");
  EXPECT_EQ(picked["status"], "ok");
  EXPECT_TRUE(contains(picked["extraction"], "tagged cuda, 3 complete blocks")) << picked;
  EXPECT_TRUE(contains(r.out, "1 ok, 1 without code")) << r.out;

  run_pkb(generate_args(out, {}, "coll_allreduce"), 120, env_for(server));
  EXPECT_EQ(server.requests().size(), 2u) << "a sample without code was answered: it is not asked again";
}

TEST(GenCommand, ABadKeyStopsTheModelAndNeverShowsTheKey) {
  FakeServer server("the-right-key");
  std::string out = temp_dir("gen-badkey");
  PkbRun r = run_pkb(generate_args(out, {"--jobs", "1"}), 120, env_for(server));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(server.requests().size(), 1u) << "no retries, and the model's other requests are not sent";
  EXPECT_TRUE(contains(r.err, "pkb: error: openai:fake-model stopped: HTTP 401")) << r.err;
  EXPECT_TRUE(contains(r.err, "OPENAI_API_KEY")) << "names the fix: " << r.err;
  EXPECT_TRUE(contains(r.out, "0 ok, 0 without code, 1 failed, 0 already there, 5 not asked")) << r.out;
  EXPECT_FALSE(contains(r.out + r.err + everything_under(out), kGenerateKey)) << "the key leaked";
}

TEST(GenCommand, BadInputFailsInOneLineNamingTheFix) {
  std::string out = temp_dir("gen-bad");
  PkbRun r = run_pkb({"generate", "--model", "gpt-9", "--output-dir", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: unknown model 'gpt-9'; use one of ")) << r.err;

  r = run_pkb({"generate", "--model", "claude-opus-4.5", "--problem", "1", "--shots", "zero_shot", "--output-dir", out},
              60, {{"ANTHROPIC_API_KEY", ""}});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: ANTHROPIC_API_KEY is not set; export it")) << r.err;

  std::string models = out + "/models.toml";
  std::ofstream(models) << "[providers.x]\nprotocol = \"openai-chat\"\nbase_url = 3\n";
  r = run_pkb({"generate", "--model", "x:y", "--models", models, "--output-dir", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "models.toml:3: [providers.x].base_url must be a string")) << r.err;

  std::string prompts = out + "/prompts.toml";
  std::string text = slurp(PKB_SOURCE_DIR "/prompts.toml");
  text.replace(text.find("{problem_facts}"), 15, "{problem_fact}");
  std::ofstream(prompts) << text;
  r = run_pkb({"prompt", "--problem", "coll_allreduce", "--prompts", prompts});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "template 'problem' uses unknown placeholder {problem_fact}")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(GenCommand, PromptCommandPrintsTheAssembledPrompt) {
  PkbRun r = run_pkb({"prompt", "--problem", "coll_reducescatter", "--backend", "cuda", "--shots", "zero_shot",
                      "--hardware", "b200_8"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "===== system =====\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "===== user =====\n"));
  EXPECT_TRUE(contains(r.out, "NVLink 900 GB/s")) << "the b200_8 profile";
  EXPECT_TRUE(contains(r.out, "W = 8")) << "the profile's GPU count";
  EXPECT_TRUE(contains(r.out, "PKB_REFERENCE(\"coll_reducescatter\""));
  r = run_pkb({"prompt", "--problem", "1", "--hardware", "auto", "--shots", "zero_shot"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "## The machine")) << "auto falls back to the default profile without a GPU";
}

TEST(GenCommand, InterruptKeepsWhatFinishedAndTheSameCommandResumes) {
  // Two answers come at once; every later request stalls until pkb is interrupted.
  FakeServer server(kGenerateKey,
                    {{"stall_s", 60}, {"queue", {json::object(), json::object()}}, {"default", {{"stall", true}}}});
  std::string out = temp_dir("gen-interrupt");
  std::vector<std::string> argv = {PKB_BIN};
  for (auto& a : generate_args(out, {"--jobs", "2", "--timeout", "60"})) argv.push_back(a);
  auto env = env_for(server);
  Child pkb(argv, env, out + "/stdout", out + "/stderr");
  std::string run_dir = out + "/solutions_cuda/" + kRun;
  for (int i = 0; i < 300 && manifest(run_dir).size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the next requests are stalled in flight
  pkb.signal(SIGINT);
  int code = pkb.wait(10);
  EXPECT_EQ(code, 130) << slurp(out + "/stderr");
  EXPECT_TRUE(contains(slurp(out + "/stderr"), "interrupted; finished samples are kept")) << slurp(out + "/stderr");
  int kept = 0;
  for (auto& l : manifest(run_dir)) kept += l["status"] == "ok";
  EXPECT_EQ(kept, 2);

  // The server answers again: the same command finishes the other four and only those.
  FakeServer healthy(kGenerateKey);
  PkbRun r = run_pkb(generate_args(out), 120, env_for(healthy));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(healthy.requests().size(), 4u);
  EXPECT_TRUE(contains(r.out, "4 ok, 0 without code, 0 failed, 2 already there")) << r.out;
}

// --dry-run prints the prompts, their token estimates and the requests it would send, and
// sends nothing (the loopback server sees no request), writes nothing and needs no key.
TEST(GenCommand, DryRunPrintsPromptsAndSendsNothing) {
  FakeServer server(kGenerateKey);
  std::string out = temp_dir("gen-dry");
  PkbRun r = run_pkb(generate_args(out, {"--dry-run"}), 120,
                     {{"PKB_OPENAI_BASE_URL", server.url("/v1")}, {"OPENAI_API_KEY", ""}});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(server.requests().size(), 0u) << "a dry run sends no request";
  EXPECT_FALSE(fs::exists(out + "/solutions_cuda")) << "a dry run writes nothing";
  for (const char* slug : {"coll_allreduce", "coll_allgather", "coll_broadcast"})
    EXPECT_TRUE(contains(r.out, "===== " + std::string(slug) + ": prompt ")) << r.out;
  EXPECT_TRUE(contains(r.out, "===== user =====\nWrite a CUDA C++ candidate")) << r.out;
  EXPECT_TRUE(contains(r.out, "dry run: no request sent. 3 prompts, ~")) << r.out;
  EXPECT_TRUE(contains(r.out, "openai:fake-model: 6 requests (6 samples, 0 already there) to " + server.url("/v1")))
      << r.out;
  EXPECT_TRUE(contains(r.out, "\nrequests: 6\n")) << r.out;

  // After a real run of sample 0, a dry run counts only what is missing.
  ASSERT_EQ(run_pkb(generate_args(out, {}, "coll_allreduce,coll_allgather,3", "1"), 120, env_for(server)).code, 0);
  size_t asked = server.requests().size();
  r = run_pkb(generate_args(out, {"--dry-run"}), 120, env_for(server));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(server.requests().size(), asked);
  EXPECT_TRUE(contains(r.out, "openai:fake-model: 3 requests (6 samples, 3 already there)")) << r.out;
}

// --temperature, --top-p, --seed and --max-tokens reach every request (sample k with seed
// + k); the manifest records them with each request's cost from the models table's prices,
// and the run prints its totals.
TEST(GenCommand, SamplingControlsReachEveryRequestAndCostsAreTotalled) {
  FakeServer server(kGenerateKey);
  std::string out = temp_dir("gen-sampling");
  std::string models = out + "/models.toml";
  std::ofstream(models) << "[providers.fake]\nprotocol = \"openai-chat\"\nbase_url = \"" << server.url("/v1")
                        << "\"\napi_key_env = \"OPENAI_API_KEY\"\n\n[models.\"priced\"]\nprovider = \"fake\"\n"
                           "model = \"fake-model\"\ninput_usd_per_mtok = 2.0\noutput_usd_per_mtok = 10.0\n";
  PkbRun r = run_pkb({"generate", "--model", "priced", "--models", models, "--problem", "coll_allreduce", "--samples",
                      "2", "--backend", "cuda", "--shots", "zero_shot", "--hardware", "h100_8", "--output-dir", out,
                      "--jobs", "1", "--temperature", "0.2", "--top-p", "0.9", "--seed", "7", "--max-tokens", "1000"},
                     120, {{"OPENAI_API_KEY", kGenerateKey}});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  std::set<int> seeds;
  for (auto& q : requests) {
    EXPECT_DOUBLE_EQ(q["sampling"]["temperature"].get<double>(), 0.2) << q;
    EXPECT_DOUBLE_EQ(q["sampling"]["top_p"].get<double>(), 0.9) << q;
    EXPECT_EQ(q["sampling"]["max_tokens"], 1000) << q;
    seeds.insert(q["sampling"]["seed"].get<int>());
  }
  EXPECT_EQ(seeds, (std::set<int>{7, 8})) << "sample k gets seed + k";
  double total = 0;
  for (auto& l : manifest(out + "/solutions_cuda/priced_cuda_dt_h100_8_zero_shot")) {
    EXPECT_EQ(l["sampling"]["seed"].get<int>(), 7 + l["sample"].get<int>()) << l;
    EXPECT_DOUBLE_EQ(l["sampling"]["temperature"].get<double>(), 0.2);
    double cost = (l["tokens_in"].get<double>() * 2.0 + l["tokens_out"].get<double>() * 10.0) / 1e6;
    EXPECT_NEAR(l["cost_usd"].get<double>(), cost, 1e-12) << l;
    total += cost;
  }
  char want[64];
  snprintf(want, sizeof want, "cost $%.2f", total);
  EXPECT_TRUE(contains(r.out, "  2 requests: ")) << r.out;
  EXPECT_TRUE(contains(r.out, want)) << r.out;

  // Without prices the cost is unknown, never made up.
  PkbRun unpriced = run_pkb(generate_args(out, {"--jobs", "1"}, "coll_allreduce", "1"), 120, env_for(server));
  ASSERT_EQ(unpriced.code, 0) << unpriced.err;
  EXPECT_TRUE(contains(unpriced.out, "cost unknown (no prices in the models table)")) << unpriced.out;
  EXPECT_TRUE(manifest(out + "/solutions_cuda/" + kRun)[0]["cost_usd"].is_null());
}

TEST(GenCommand, AConnectionFailureNamesTheUrl) {
  std::string out = temp_dir("gen-refused");
  PkbRun r = run_pkb(generate_args(out, {"--retries", "0", "--jobs", "1"}, "coll_allreduce", "1"), 120,
                     {{"PKB_OPENAI_BASE_URL", "http://127.0.0.1:1/v1"}, {"OPENAI_API_KEY", kGenerateKey}});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "cannot reach http://127.0.0.1:1/v1/chat/completions: ")) << r.err;
  EXPECT_TRUE(contains(manifest(out + "/solutions_cuda/" + kRun)[0]["error"], "http://127.0.0.1:1/v1/chat/completions"));
}

TEST(GenCommand, AMissingModelsFileSaysNotFound) {
  std::string out = temp_dir("gen-nomodels");
  PkbRun r = run_pkb({"generate", "--model", "local", "--models", out + "/none.toml", "--output-dir", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: " + out + "/none.toml: not found\n")) << r.err;
  r = run_pkb({"generate", "--model", "local", "--models", out, "--output-dir", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: " + out + ": is a folder, not a TOML file\n")) << r.err;
}

// The CPU backend describes the CPU device: its own profile and W = 4, no GPU words.
TEST(GenCommand, CpuBackendDescribesTheCpuDevice) {
  for (std::vector<std::string> hw : {std::vector<std::string>{}, {"--hardware", "auto"}, {"--hardware", "cpu"}}) {
    std::vector<std::string> args = {"prompt", "--problem", "coll_allreduce", "--backend", "cpu", "--shots",
                                     "zero_shot"};
    args.insert(args.end(), hw.begin(), hw.end());
    PkbRun r = run_pkb(args);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "===== user =====\nWrite a C++17 candidate for the pkb problem `coll_allreduce`, to run "
                                "on pkb's CPU device."))
        << r.out;
    EXPECT_TRUE(contains(r.out, "Timing runs on pkb's CPU device")) << r.out;
    EXPECT_TRUE(contains(r.out, "the values below are for W = 4")) << "shapes at W = 4: " << r.out;
    EXPECT_TRUE(contains(r.out, "Least traffic and work per rank at these sizes: to and from peers ")) << r.out;
    EXPECT_TRUE(contains(r.out, "pkb::host::bf16_to_float")) << "the CPU's bf16 note";
    for (const char* gpu : {"H100", "__nv_bfloat16", "NVLink", "HBM"})
      EXPECT_FALSE(contains(r.out, gpu)) << "the CPU prompt mentions " << gpu;
  }
  // Its runs are named for the CPU device.
  std::string out = temp_dir("gen-cpu-run");
  PkbRun r = run_pkb({"generate", "--model", "local", "--problem", "coll_allreduce", "--backend", "cpu", "--shots",
                      "zero_shot", "--output-dir", out, "--dry-run"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "/solutions_cpu/local_cpu_dt_cpu_zero_shot\n")) << r.out;
}
