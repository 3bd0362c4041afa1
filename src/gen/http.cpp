#include "gen/http.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>

namespace pkb::gen {

namespace {

struct Transfer {
  HttpResponse* res;
  const std::atomic<bool>* cancel;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  static_cast<Transfer*>(user)->res->body.append(data, size * n);
  return size * n;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  std::string line(data, size * n);
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name == "retry-after") {
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      value.erase(value.find_last_not_of(" \t\r\n") + 1);
      static_cast<Transfer*>(user)->res->retry_after_s = parse_retry_after(value);
    }
  }
  return size * n;
}

// libcurl calls this at least once a second, also while waiting for a silent server.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->cancel && t->cancel->load() ? 1 : 0;
}

}  // namespace

void http_global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::optional<double> parse_retry_after(const std::string& value) {
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; })) {
    try {
      return std::max(0.0, std::stod(value));
    } catch (...) {
      return std::nullopt;
    }
  }
  time_t when = curl_getdate(value.c_str(), nullptr);
  if (when < 0) return std::nullopt;
  return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

HttpResponse http_post(const HttpRequest& req, const std::atomic<bool>* cancel) {
  http_global_init();
  HttpResponse res;
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    res.transport_error = "curl_easy_init failed";
    return res;
  }
  curl_slist* headers = nullptr;
  for (auto& h : req.headers) headers = curl_slist_append(headers, h.c_str());
  // No "Expect: 100-continue" round trip before large bodies: some servers never answer it.
  headers = curl_slist_append(headers, "Expect:");
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(headers, curl_slist_free_all);
  Transfer t{&res, cancel};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(req.connect_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(c, CURLOPT_USERAGENT, "pkb-generate");
  // Long answers with no bytes for minutes: keep NAT and proxies from dropping the line.
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);

  auto t0 = std::chrono::steady_clock::now();
  CURLcode rc = curl_easy_perform(c);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc == CURLE_OK) {
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res.status);
  } else {
    res.status = 0;
    res.cancelled = rc == CURLE_ABORTED_BY_CALLBACK;
    res.timed_out = rc == CURLE_OPERATION_TIMEDOUT;
    char why[96];
    snprintf(why, sizeof why, "no answer within %g s", req.timeout_s);
    res.transport_error = res.timed_out ? why : curl_easy_strerror(rc);
  }
  return res;
}

}  // namespace pkb::gen
