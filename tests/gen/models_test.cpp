// The models table and the wire protocols, without a network: resolving names, base URL
// overrides, keys from the environment, request shapes and answer parsing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "gen/client.hpp"
#include "gen/error.hpp"
#include "gen/protocol.hpp"

namespace fs = std::filesystem;
using namespace pkb::gen;
using json = nlohmann::json;

namespace {

const std::string kModels = PKB_SOURCE_DIR "/models.toml";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const pkb::io::InputError& e) {  // GenError, and the TOML reader's own errors
    return e.what();
  }
  return "no error";
}

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool has_header(const HttpRequest& r, const std::string& h) {
  return std::find(r.headers.begin(), r.headers.end(), h) != r.headers.end();
}

}  // namespace

TEST(GenModels, TableEntriesAndProviderColonModel) {
  ModelTable t = ModelTable::load(kModels);
  Model m = t.resolve("gpt-5.5");
  EXPECT_EQ(m.provider.protocol, Protocol::openai_responses);
  EXPECT_EQ(m.provider.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(m.provider.api_key_env, "OPENAI_API_KEY");
  EXPECT_EQ(m.reasoning_effort, "high");
  Model q = t.resolve("together:Qwen/Qwen3-Coder-Next-FP8");
  EXPECT_EQ(q.id, "Qwen/Qwen3-Coder-Next-FP8");
  EXPECT_EQ(q.provider.base_url, "https://api.together.xyz/v1");
  EXPECT_EQ(q.max_tokens, 32768);
  EXPECT_EQ(model_slug(q.name), "together_Qwen_Qwen3-Coder-Next-FP8");

  EXPECT_TRUE(mentions(error_of([&] { t.resolve("gpt-9"); }), "unknown model 'gpt-9'; use one of ")) << "lists the table";
  EXPECT_TRUE(mentions(error_of([&] { t.resolve("acme:x"); }), "unknown provider 'acme' in --model acme:x"));
}

TEST(GenModels, BaseUrlFromFlagThenEnvironmentThenTable) {
  ModelTable t = ModelTable::load(kModels);
  setenv("PKB_ANTHROPIC_BASE_URL", "http://127.0.0.1:9/v1/", 1);
  EXPECT_EQ(t.resolve("claude-opus-4.5").provider.base_url, "http://127.0.0.1:9/v1");
  EXPECT_EQ(t.resolve("claude-opus-4.5", "http://flag/v1").provider.base_url, "http://flag/v1");
  unsetenv("PKB_ANTHROPIC_BASE_URL");
  EXPECT_EQ(t.resolve("claude-opus-4.5").provider.base_url, "https://api.anthropic.com/v1");
  EXPECT_EQ(base_url_variable("openai-responses"), "PKB_OPENAI_RESPONSES_BASE_URL");
}

TEST(GenModels, KeyComesFromTheEnvironmentAndMissingKeysNameTheVariable) {
  Model m = ModelTable::load(kModels).resolve("gemini-3-pro");
  unsetenv("GEMINI_API_KEY");
  EXPECT_EQ(error_of([&] { api_key(m); }),
            "GEMINI_API_KEY is not set; export it with your gemini API key (model gemini-3-pro)");
  setenv("GEMINI_API_KEY", "g-secret", 1);
  EXPECT_EQ(api_key(m), "g-secret");
  unsetenv("GEMINI_API_KEY");
  EXPECT_EQ(api_key(ModelTable::load(kModels).resolve("local")), "") << "servers without a key";
}

TEST(GenModels, MalformedTablesNameFileAndLine) {
  std::string path = (fs::temp_directory_path() / ("pkb-models-" + std::to_string(getpid()) + ".toml")).string();
  std::ofstream(path)
      << "[providers.x]\nprotocol = \"openai-chat\"\nbase_url = \"http://h\"\n[models.m]\nprovider = \"x\"\n"
         "model = \"m\"\nmax_tokens = \"lots\"\n";
  EXPECT_TRUE(
      mentions(error_of([&] { ModelTable::load(path); }), ".toml:7: [models.\"m\"].max_tokens must be a whole number"));
  std::ofstream(path) << "[providers.x]\nprotocol = \"carrier-pigeon\"\nbase_url = \"http://h\"\n";
  EXPECT_TRUE(mentions(error_of([&] { ModelTable::load(path); }), "unknown protocol 'carrier-pigeon'"));
  std::ofstream(path) << "[providers.x\n";
  EXPECT_TRUE(mentions(error_of([&] { ModelTable::load(path); }), ".toml:1: malformed TOML"));
  fs::remove(path);
}

TEST(GenProtocol, RequestsCarryEachProvidersFieldsAndHeaders) {
  ModelTable t = ModelTable::load(kModels);
  Prompt p{"SYS", "USER"};
  HttpRequest chat = build_request(t.resolve("gpt-5.5-chat"), "k1", p);
  json b = json::parse(chat.body);
  EXPECT_EQ(chat.url, "https://api.openai.com/v1/chat/completions");
  EXPECT_TRUE(has_header(chat, "Authorization: Bearer k1"));
  EXPECT_EQ(b["messages"][0]["content"], "SYS");
  EXPECT_EQ(b["max_completion_tokens"], 64000);
  EXPECT_EQ(b["reasoning_effort"], "high");

  HttpRequest resp = build_request(t.resolve("gpt-5.5"), "k1", p);
  b = json::parse(resp.body);
  EXPECT_EQ(resp.url, "https://api.openai.com/v1/responses");
  EXPECT_EQ(b["instructions"], "SYS");
  EXPECT_EQ(b["input"], "USER");
  EXPECT_EQ(b["reasoning"]["effort"], "high");
  EXPECT_EQ(b["max_output_tokens"], 64000);

  HttpRequest claude = build_request(t.resolve("claude-opus-4.5"), "k2", p);
  b = json::parse(claude.body);
  EXPECT_EQ(claude.url, "https://api.anthropic.com/v1/messages");
  EXPECT_TRUE(has_header(claude, "x-api-key: k2"));
  EXPECT_TRUE(has_header(claude, "anthropic-version: 2023-06-01"));
  EXPECT_EQ(b["system"], "SYS");
  EXPECT_EQ(b["thinking"]["budget_tokens"], 16000);

  HttpRequest gem = build_request(t.resolve("gemini:gemini-x"), "k3", p);
  EXPECT_EQ(gem.url, "https://generativelanguage.googleapis.com/v1beta/models/gemini-x:generateContent");
  EXPECT_FALSE(mentions(gem.url, "k3")) << "keys never go in URLs";
  EXPECT_TRUE(has_header(gem, "x-goog-api-key: k3"));
  b = json::parse(gem.body);
  EXPECT_EQ(b["contents"][0]["parts"][0]["text"], "USER");
  EXPECT_EQ(b["systemInstruction"]["parts"][0]["text"], "SYS");

  Model local = t.resolve("local");
  local.extra = {{"temperature", 0.2}, {"max_tokens", nullptr}};
  b = json::parse(build_request(local, "", p).body);
  EXPECT_EQ(b["temperature"], 0.2);
  EXPECT_FALSE(b.contains("max_tokens")) << "extra = { max_tokens = null } removes the field";
  EXPECT_FALSE(has_header(build_request(local, "", p), "Authorization: Bearer ")) << "no key, no header";
}

// pkb agent's conversations: every protocol gets the whole conversation, the system prompt
// where it always goes and the turns in order with the protocol's name for the model.
TEST(GenProtocol, ConversationsGoAsAlternatingTurnsInEveryProtocol) {
  ModelTable t = ModelTable::load(kModels);
  Conversation c{"SYS", {{Role::user, "U1"}, {Role::assistant, "A1"}, {Role::user, "U2"}}};
  auto roles_and_texts = [](const json& list, const char* role_key, const std::function<std::string(const json&)>& text) {
    std::vector<std::string> out;
    for (auto& m : list) out.push_back(m[role_key].get<std::string>() + ":" + text(m));
    return out;
  };
  auto content = [](const json& m) { return m["content"].get<std::string>(); };

  json b = json::parse(build_request(t.resolve("gpt-5.5-chat"), "k", c).body);
  EXPECT_EQ(roles_and_texts(b["messages"], "role", content),
            (std::vector<std::string>{"system:SYS", "user:U1", "assistant:A1", "user:U2"}));

  b = json::parse(build_request(t.resolve("gpt-5.5"), "k", c).body);
  EXPECT_EQ(b["instructions"], "SYS");
  ASSERT_TRUE(b["input"].is_array()) << "a conversation is a list of input items";
  EXPECT_EQ(roles_and_texts(b["input"], "role", content),
            (std::vector<std::string>{"user:U1", "assistant:A1", "user:U2"}));
  EXPECT_EQ(b["store"], false);

  b = json::parse(build_request(t.resolve("claude-opus-4.5"), "k", c).body);
  EXPECT_EQ(b["system"], "SYS");
  EXPECT_EQ(roles_and_texts(b["messages"], "role", content),
            (std::vector<std::string>{"user:U1", "assistant:A1", "user:U2"}));

  b = json::parse(build_request(t.resolve("gemini:gemini-x"), "k", c).body);
  EXPECT_EQ(b["systemInstruction"]["parts"][0]["text"], "SYS");
  EXPECT_EQ(roles_and_texts(b["contents"], "role", [](const json& m) { return m["parts"][0]["text"].get<std::string>(); }),
            (std::vector<std::string>{"user:U1", "model:A1", "user:U2"}));

  // A single question is the same request as before conversations existed.
  Prompt p{"SYS", "U1"};
  for (auto name : {"gpt-5.5-chat", "gpt-5.5", "claude-opus-4.5", "gemini:gemini-x"})
    EXPECT_EQ(build_request(t.resolve(name), "k", p).body,
              build_request(t.resolve(name), "k", Conversation{"SYS", {{Role::user, "U1"}}}).body)
        << name;
  EXPECT_EQ(json::parse(build_request(t.resolve("gpt-5.5"), "k", p).body)["input"], "U1");
}

TEST(GenProtocol, AnswersParseLeavingReasoningOut) {
  Completion c = parse_completion(Protocol::anthropic, R"({"content":[{"type":"thinking","thinking":"hmm"},
    {"type":"text","text":"A"},{"type":"text","text":"B"}],"stop_reason":"max_tokens",
    "usage":{"input_tokens":5,"output_tokens":7}})");
  EXPECT_EQ(c.text, "AB");
  EXPECT_EQ(c.finish_reason, "max_tokens");
  EXPECT_EQ(c.tokens_in, 5);
  EXPECT_EQ(c.tokens_out, 7);
  c = parse_completion(Protocol::gemini,
                       R"({"candidates":[{"content":{"parts":[{"text":"t","thought":true},{"text":"X"}]},
    "finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"thoughtsTokenCount":10}})");
  EXPECT_EQ(c.text, "X");
  EXPECT_EQ(c.tokens_out, 14);
  c = parse_completion(Protocol::gemini, R"({"promptFeedback":{"blockReason":"SAFETY"}})");
  EXPECT_EQ(c.text, "");
  EXPECT_EQ(c.finish_reason, "blocked: SAFETY");
  c = parse_completion(Protocol::openai_responses,
                       R"({"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},
    "output":[{"type":"reasoning"},{"type":"message","content":[{"type":"output_text","text":"R"}]}]})");
  EXPECT_EQ(c.text, "R");
  EXPECT_EQ(c.finish_reason, "incomplete: max_output_tokens");
  EXPECT_THROW(parse_completion(Protocol::openai_chat, R"({"choices": [{"message": )"), MalformedResponse);
  EXPECT_THROW(parse_completion(Protocol::openai_chat, R"({"object": "list"})"), MalformedResponse);
  EXPECT_THROW(parse_completion(Protocol::anthropic, R"({"content": [1, 2]})"), MalformedResponse);
}

TEST(GenProtocol, ErrorsReadInTheProvidersWordsWithKeysRedacted) {
  EXPECT_EQ(error_message(R"({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}})"),
            "rate_limit_error: slow down");
  EXPECT_EQ(error_message(R"([{"error":{"code":400,"message":"API key not valid","status":"INVALID_ARGUMENT"}}])"),
            "INVALID_ARGUMENT: API key not valid");
  EXPECT_EQ(error_message("<html>Bad gateway</html>"), "<html>Bad gateway</html>");
  EXPECT_TRUE(stops_the_model(401, ""));
  EXPECT_TRUE(stops_the_model(404, ""));
  EXPECT_TRUE(stops_the_model(400, R"({"error":{"details":[{"reason":"API_KEY_INVALID"}]}})"));
  EXPECT_FALSE(stops_the_model(400, R"({"error":{"message":"prompt is too long"}})"));
  EXPECT_FALSE(stops_the_model(429, ""));
  EXPECT_EQ(redact("bad key sk-123 (sk-123)", "sk-123"), "bad key [key] ([key])");
  EXPECT_EQ(redact("a key k", "k"), "a [key]ey [key]") << "a key inside the mark itself ends too";
}

TEST(GenBackoff, DoublesWithJitterAndHonoursRetryAfter) {
  RetryPolicy p;
  p.base_delay_s = 2;
  p.max_delay_s = 10;
  for (int i = 0; i < 50; ++i) {
    double d1 = backoff_delay(p, 1, 0), d3 = backoff_delay(p, 3, 0), d9 = backoff_delay(p, 9, 0);
    EXPECT_GE(d1, 1.0);
    EXPECT_LE(d1, 2.0);
    EXPECT_GE(d3, 4.0);
    EXPECT_LE(d3, 8.0);
    EXPECT_LE(d9, 10.0);
    EXPECT_GE(backoff_delay(p, 1, 30), 30.0) << "Retry-After is a floor";
  }
  p.max_retry_after_s = 60;
  EXPECT_EQ(backoff_delay(p, 1, 3600), 60.0);
  EXPECT_EQ(parse_retry_after("7").value(), 7.0);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT").value(), 0.0) << "a date in the past";
  EXPECT_FALSE(parse_retry_after("soon").has_value());
}
