#include "fake_server.hpp"

#include <fcntl.h>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace pkbtest {

namespace fs = std::filesystem;

Child::Child(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
             const std::string& stdout_path, const std::string& stderr_path) {
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool replaced = false;
    for (auto& [k, v] : env) replaced = replaced || kv.rfind(k + "=", 0) == 0;
    if (!replaced) envs.push_back(kv);
  }
  for (auto& [k, v] : env) envs.push_back(k + "=" + v);
  std::vector<char*> a, e;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  for (auto& s : envs) e.push_back(const_cast<char*>(s.c_str()));
  e.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!stdout_path.empty())
    posix_spawn_file_actions_addopen(&fa, 1, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!stderr_path.empty())
    posix_spawn_file_actions_addopen(&fa, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int rc = posix_spawn(&pid_, a[0], &fa, nullptr, a.data(), e.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
}

Child::~Child() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void Child::signal(int sig) { kill(pid_, sig); }

int Child::wait(double timeout_s) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (std::chrono::steady_clock::now() > until) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

FakeServer::FakeServer(const std::string& key, nlohmann::json script) {
  script["key"] = key;
  static int counter = 0;
  dir_ = (fs::temp_directory_path() / ("pkb-fake-llm-" + std::to_string(getpid()) + "-" + std::to_string(++counter)))
             .string();
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  std::ofstream(dir_ + "/script.json") << script.dump();
  std::string port_file = dir_ + "/port";
  child_ = std::make_unique<Child>(
      std::vector<std::string>{PKB_PYTHON, PKB_SOURCE_DIR "/tests/gen/fake_llm_server.py", "--script",
                               dir_ + "/script.json", "--log", dir_ + "/requests.jsonl", "--port-file", port_file,
                               "--files-from", PKB_SOURCE_DIR},
      std::vector<std::pair<std::string, std::string>>{}, "", dir_ + "/server.err");
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!fs::exists(port_file)) {
    if (std::chrono::steady_clock::now() > until || child_->wait(0) != -1)
      throw std::runtime_error("the fake LLM server did not start: " + slurp(dir_ + "/server.err"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  port_ = std::stoi(slurp(port_file));
}

FakeServer::~FakeServer() {
  child_.reset();  // stops the server first
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string FakeServer::url(const std::string& prefix) const {
  return "http://127.0.0.1:" + std::to_string(port_) + prefix;
}

std::vector<nlohmann::json> FakeServer::requests() const {
  std::vector<nlohmann::json> out;
  std::ifstream f(dir_ + "/requests.jsonl");
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace pkbtest
