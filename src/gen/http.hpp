// HTTPS POST through libcurl: one blocking request per call, safe from many threads, with
// a total deadline and a cancel flag polled while the request waits.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace pkb::gen {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  double timeout_s = 1800;  // the whole request, answer included
  double connect_timeout_s = 30;
};

struct HttpResponse {
  long status = 0;  // 0: no HTTP answer (see transport_error)
  std::string body;
  std::optional<double> retry_after_s;  // the Retry-After header, in seconds from now
  std::string transport_error;          // curl's words when the exchange itself failed
  bool timed_out = false;
  bool cancelled = false;
  double seconds = 0;
};

// Call once before threads start (curl_global_init is not thread-safe).
void http_global_init();

// Never throws for network or HTTP failures: they come back in the response.
HttpResponse http_post(const HttpRequest& req, const std::atomic<bool>* cancel = nullptr);

// "120" or an HTTP date -> seconds from now (never negative); nullopt when unreadable.
std::optional<double> parse_retry_after(const std::string& value);

}  // namespace pkb::gen
