#include "gen/client.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "gen/http.hpp"
#include "gen/protocol.hpp"

namespace pkb::gen {

namespace {

bool retryable_status(long status) {
  return status == 408 || status == 409 || status == 425 || status == 429 || status >= 500;
}

// Sleeps up to `seconds`, waking early when `stop` rises. False when it did.
bool wait_unless_stopped(double seconds, const std::atomic<bool>& stop) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (stop.load()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return !stop.load();
}

}  // namespace

double backoff_delay(const RetryPolicy& policy, int attempt, double retry_after_s) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  double d = std::min(policy.max_delay_s, policy.base_delay_s * std::pow(2.0, attempt - 1));
  d *= std::uniform_real_distribution<double>(0.5, 1.0)(rng);
  return std::max(d, std::min(retry_after_s, policy.max_retry_after_s));
}

Reply request_completion(const Model& m, const std::string& key, const Prompt& p, const RetryPolicy& policy,
                         const std::atomic<bool>& stop, const RetryNote& note) {
  return request_completion(m, key, Conversation::of(p), policy, stop, note);
}

Reply request_completion(const Model& m, const std::string& key, const Conversation& c, const RetryPolicy& policy,
                         const std::atomic<bool>& stop, const RetryNote& note) {
  HttpRequest req = build_request(m, key, c);
  req.timeout_s = policy.timeout_s;
  req.connect_timeout_s = policy.connect_timeout_s;
  Reply r;
  auto t0 = std::chrono::steady_clock::now();
  auto finish = [&](Outcome o) {
    r.outcome = o;
    r.error = redact(r.error, key);
    r.raw = redact(r.raw, key);
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  for (;;) {
    ++r.attempts;
    HttpResponse res = http_post(req, &stop);
    r.http_status = res.status;
    r.latency_s = res.seconds;
    r.raw = res.body;
    bool retry = false;
    if (res.cancelled) {
      r.error = "interrupted";
      return finish(Outcome::interrupted);
    }
    if (res.status == 0) {
      r.error = res.transport_error;
      retry = true;
    } else if (res.status >= 200 && res.status < 300) {
      try {
        r.completion = parse_completion(m.provider.protocol, res.body);
        r.error.clear();
        return finish(Outcome::ok);
      } catch (const MalformedResponse& e) {
        r.error = "malformed answer: " + std::string(e.what());
        retry = true;
      }
    } else {
      r.error = "HTTP " + std::to_string(res.status) + ": " + error_message(res.body);
      if (stops_the_model(res.status, res.body)) {
        r.error += res.status == 404 ? "; check the model id '" + m.id + "' and the base URL " + m.provider.base_url
                   : m.provider.api_key_env.empty() ? "; check the server's key settings"
                                                    : "; check " + m.provider.api_key_env;
        return finish(Outcome::model_stopped);
      }
      retry = retryable_status(res.status);
    }
    if (!retry || r.attempts > policy.retries) return finish(Outcome::failed);
    double wait = backoff_delay(policy, r.attempts, res.retry_after_s.value_or(0));
    if (note) note(r.attempts, redact(r.error, key), wait);
    if (!wait_unless_stopped(wait, stop)) {
      r.error = "interrupted";
      return finish(Outcome::interrupted);
    }
  }
}

}  // namespace pkb::gen
