// The fake LLM provider (fake_llm_server.py) as a test fixture: a real HTTP server on
// 127.0.0.1 in a child process, scripted per request, logging every request it gets.
#pragma once

#include <sys/types.h>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace pkbtest {

// A child process started with posix_spawn; killed (SIGKILL) and reaped when destroyed.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env = {},
        const std::string& stdout_path = "", const std::string& stderr_path = "");
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  void signal(int sig);
  // The exit code (128 + signal when killed by one), or -1 when it outlives `timeout_s`.
  int wait(double timeout_s);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

class FakeServer {
 public:
  // Expects `key`; `script` holds "queue", "turns", "default" and "stall_s" as
  // fake_llm_server.py describes (code_file paths are relative to the source folder).
  explicit FakeServer(const std::string& key, nlohmann::json script = nlohmann::json::object());
  ~FakeServer();
  // http://127.0.0.1:<port><prefix>, e.g. url("/v1").
  std::string url(const std::string& prefix) const;
  // Every request so far, in arrival order.
  std::vector<nlohmann::json> requests() const;

 private:
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<Child> child_;
};

std::string slurp(const std::string& path);

}  // namespace pkbtest
