#include "launch/stopped.hpp"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "launch/procfs.hpp"

namespace pkb::launch {

namespace {

char state_in(const std::string& stat_path) {
  std::string fields = stat_fields(stat_path);
  return fields.empty() ? 0 : fields[0];
}

// Whether every thread of `pid` is stopped (a group stop reaches each thread in turn).
bool all_threads_stopped(pid_t pid) {
  std::error_code ec;
  int seen = 0;
  for (auto& t : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    char s = state_in(t.path().string() + "/stat");
    if (s != 'T' && s != 't') return false;
    ++seen;
  }
  return !ec && seen > 0;
}

}  // namespace

char process_state(pid_t pid) { return state_in("/proc/" + std::to_string(pid) + "/stat"); }

Stopped::Stopped(pid_t pid) {
  if (pid <= 0 || kill(pid, SIGSTOP) != 0) return;
  pid_ = pid;
  // SIGSTOP lands asynchronously: every thread is off its CPU once each one's state says so.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < until) {
    if (all_threads_stopped(pid)) {
      ok_ = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

Stopped::~Stopped() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

}  // namespace pkb::launch
