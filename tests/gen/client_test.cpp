// One request against a real HTTP server on loopback speaking each provider's protocol:
// answers parse, and 429 (with Retry-After), 500, a stalled connection and malformed JSON
// are retried; a bad key stops the model at once, with the key redacted; Ctrl-C's flag
// abandons a request in flight.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fake_server.hpp"
#include "gen/client.hpp"

using namespace pkb::gen;
using pkbtest::FakeServer;
using json = nlohmann::json;

namespace {

const char* kKey = "sk-test-SECRET-4242";

struct Case {
  Protocol protocol;
  const char* prefix;  // where the provider's API version begins
};

void PrintTo(const Case& c, std::ostream* os) { *os << protocol_name(c.protocol); }

Model model_for(const Case& c, const FakeServer& server) {
  Model m;
  m.name = "fake";
  m.id = "fake-model-1";
  m.provider.name = protocol_name(c.protocol);
  m.provider.protocol = c.protocol;
  m.provider.base_url = server.url(c.prefix);
  m.max_tokens = 1000;
  return m;
}

RetryPolicy quick() {
  RetryPolicy p;
  p.retries = 3;
  p.base_delay_s = 0.01;
  p.timeout_s = 1;
  return p;
}

Reply ask(const Case& c, const FakeServer& server, const RetryPolicy& p = quick(), const std::string& key = kKey) {
  std::atomic<bool> stop{false};
  return request_completion(model_for(c, server), key, Prompt{"system", "Write the pkb problem `coll_x`."}, p, stop);
}

class Loopback : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(Loopback, AnswersParse) {
  FakeServer server(kKey);
  Reply r = ask(GetParam(), server);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.error;
  EXPECT_NE(r.completion.text.find("fake candidate 1 for coll_x"), std::string::npos) << r.completion.text;
  EXPECT_EQ(r.completion.text.find("THOUGHT_NOT_CODE"), std::string::npos) << "reasoning is not the answer";
  EXPECT_GT(r.completion.tokens_in, 0);
  EXPECT_GT(r.completion.tokens_out, 0);
  EXPECT_FALSE(r.completion.finish_reason.empty());
  EXPECT_EQ(r.attempts, 1);
  auto log = server.requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["auth"], "ok");
  EXPECT_EQ(log[0]["protocol"], protocol_name(GetParam().protocol));
}

TEST_P(Loopback, TooManyRequestsWaitsForRetryAfter) {
  FakeServer server(kKey, {{"queue", {{{"status", 429}, {"retry_after", 1}}}}});
  Reply r = ask(GetParam(), server);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.error;
  EXPECT_EQ(r.attempts, 2);
  auto log = server.requests();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_GE(log[1]["t"].get<double>() - log[0]["t"].get<double>(), 0.95) << "waited for Retry-After, not 10 ms";
}

TEST_P(Loopback, ServerErrorsAndMalformedAnswersAreRetried) {
  FakeServer server(kKey, {{"queue", {{{"status", 500}}, {{"malformed", true}}, {{"status", 503}}}}});
  Reply r = ask(GetParam(), server);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.error;
  EXPECT_EQ(r.attempts, 4);
}

TEST_P(Loopback, ABadKeyStopsTheModelWithoutRetryingOrShowingTheKey) {
  FakeServer server("the-right-key");
  Reply r = ask(GetParam(), server);
  EXPECT_EQ(r.outcome, Outcome::model_stopped);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_NE(r.error.find("invalid API key: [key]"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find(kKey), std::string::npos);
  EXPECT_EQ(r.raw.find(kKey), std::string::npos);
}

// A conversation reaches the provider as turns the fake server accepts (it checks the roles
// alternate, first and last the user's) and counts.
TEST_P(Loopback, AConversationArrivesAsTurns) {
  FakeServer server(kKey, {{"turns", {{"2", {{"reply", "second answer"}}}}}});
  std::atomic<bool> stop{false};
  Conversation c{"system", {{Role::user, "first question"}, {Role::assistant, "first answer"}, {Role::user, "feedback"}}};
  Reply r = request_completion(model_for(GetParam(), server), kKey, c, quick(), stop);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.error;
  EXPECT_EQ(r.completion.text, "second answer");
  auto log = server.requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["turn"], 2);
  EXPECT_EQ(log[0]["last_user"], "feedback");
  EXPECT_EQ(log[0]["system"], "system");
}

INSTANTIATE_TEST_SUITE_P(Gen, Loopback,
                         ::testing::Values(Case{Protocol::openai_chat, "/v1"}, Case{Protocol::openai_responses, "/v1"},
                                           Case{Protocol::anthropic, "/v1"}, Case{Protocol::gemini, "/v1beta"}),
                         [](const auto& param_info) {
                           std::string n = protocol_name(param_info.param.protocol);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(GenClient, AStalledConnectionTimesOutAndIsRetried) {
  FakeServer server(kKey, {{"stall_s", 20}, {"queue", {{{"stall", true}}}}});
  auto t0 = std::chrono::steady_clock::now();
  Reply r = ask({Protocol::anthropic, "/v1"}, server);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.outcome, Outcome::ok) << r.error;
  EXPECT_EQ(r.attempts, 2);
  EXPECT_GE(s, 0.9);
  EXPECT_LT(s, 10) << "the 1 s timeout fired, not the server's 20 s stall";
}

TEST(GenClient, GivesUpAfterTheRetriesWithTheLastError) {
  FakeServer server(kKey, {{"default", {{"malformed", true}}}});
  Reply r = ask({Protocol::openai_chat, "/v1"}, server);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_EQ(r.attempts, 4);
  EXPECT_EQ(server.requests().size(), 4u);
  EXPECT_NE(r.error.find("malformed answer"), std::string::npos) << r.error;
}

TEST(GenClient, OtherClientErrorsFailTheRequestOnly) {
  FakeServer server(kKey, {{"queue", {{{"status", 400}}}}});
  Reply r = ask({Protocol::gemini, "/v1beta"}, server);
  EXPECT_EQ(r.outcome, Outcome::failed) << "a 400 that is not about the key";
  EXPECT_EQ(r.attempts, 1);
  EXPECT_NE(r.error.find("HTTP 400: INVALID_ARGUMENT: scripted 400"), std::string::npos) << r.error;
}

TEST(GenClient, StopAbandonsARequestInFlight) {
  FakeServer server(kKey, {{"stall_s", 20}, {"default", {{"stall", true}}}});
  std::atomic<bool> stop{false};
  RetryPolicy p = quick();
  p.timeout_s = 30;
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    stop = true;
  });
  auto t0 = std::chrono::steady_clock::now();
  Reply r = request_completion(model_for({Protocol::openai_chat, "/v1"}, server), kKey, Prompt{"s", "u"}, p, stop);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  raiser.join();
  EXPECT_EQ(r.outcome, Outcome::interrupted);
  EXPECT_LT(s, 3) << "curl's progress callback saw the flag within about a second";
}
