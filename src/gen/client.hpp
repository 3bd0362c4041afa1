// One sample from one model: the request, retried with exponential backoff and jitter on
// 429, 5xx, timeouts, broken connections and malformed answers, honouring Retry-After;
// stopped at once by an error that no retry fixes.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "gen/messages.hpp"
#include "gen/models.hpp"

namespace pkb::gen {

struct RetryPolicy {
  int retries = 8;          // attempts after the first
  double base_delay_s = 2;  // the first wait; doubles with every retry
  double max_delay_s = 120;
  double max_retry_after_s = 900;  // a longer Retry-After is cut to this
  double timeout_s = 1800;         // one attempt, answer included (reasoning models are slow)
  double connect_timeout_s = 30;
};

enum class Outcome {
  ok,             // an answer (which may still hold no code)
  failed,         // this request failed; others may succeed
  model_stopped,  // the model cannot work (bad key, unknown model): skip its other requests
  interrupted,    // `stop` was raised
};

struct Reply {
  Outcome outcome = Outcome::failed;
  Completion completion;
  std::string raw;    // the last HTTP body (the answer when ok), key redacted
  std::string error;  // one line when not ok, key redacted
  long http_status = 0;
  int attempts = 0;
  double latency_s = 0;  // the last attempt
  double wall_s = 0;     // every attempt and wait
};

// Told before each wait: the attempt that failed (1-based), why, and the wait in seconds.
using RetryNote = std::function<void(int attempt, const std::string& why, double wait_s)>;

Reply request_completion(const Model& m, const std::string& key, const Prompt& p, const RetryPolicy& policy,
                         const std::atomic<bool>& stop, const RetryNote& note = {});
Reply request_completion(const Model& m, const std::string& key, const Conversation& c, const RetryPolicy& policy,
                         const std::atomic<bool>& stop, const RetryNote& note = {});

// The wait before retry `attempt` (1-based): base * 2^(attempt-1), capped, times a random
// factor in [0.5, 1]; never shorter than the server's Retry-After (itself capped).
double backoff_delay(const RetryPolicy& policy, int attempt, double retry_after_s);

}  // namespace pkb::gen
