// What the sweep tests share: candidate trees laid out as pkb generate writes them, a pkb
// sweep started in the background (to be killed), and reading results files back.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../runtime/support.hpp"

namespace sweeptest {

namespace fs = std::filesystem;
using json = nlohmann::json;

inline void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Every line of a results file, parsed; a line that is not JSON fails the test.
inline std::vector<json> read_lines(const fs::path& p) {
  std::vector<json> lines;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << line;
    if (!j.is_discarded()) lines.push_back(j);
  }
  return lines;
}

inline size_t count_lines(const fs::path& p) {
  std::string text = slurp(p);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Each evaluation exactly once: as many distinct sweep tasks as lines.
inline std::set<std::string> task_keys(const std::vector<json>& lines) {
  std::set<std::string> keys;
  for (auto& l : lines) keys.insert(l["sweep"]["task"].get<std::string>());
  return keys;
}

// pkb with `args` in the background, its output to `log`, tagged for pkbtest::survivors.
struct Background {
  pid_t pid = -1;
  std::string tag;
};

inline Background start_pkb(const std::vector<std::string>& args, const std::string& log,
                            const std::vector<std::pair<std::string, std::string>>& env = {}) {
  static int counter = 0;
  Background b;
  b.tag = "bg" + std::to_string(getpid()) + "-" + std::to_string(++counter);
  auto tagged = env;
  tagged.push_back({"PKB_TEST_TAG", b.tag});
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  try {
    b.pid = pkbtest::spawn_pkb(args, tagged, fa);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  posix_spawn_file_actions_destroy(&fa);
  return b;
}

// Waits until `path` has at least `lines` lines (true) or `timeout_s` passes (false).
inline bool wait_for_lines(const fs::path& path, size_t lines, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(path) && count_lines(path) >= lines) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

inline int reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace sweeptest
