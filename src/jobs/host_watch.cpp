#include "jobs/host_watch.hpp"

namespace pkb::jobs {

HostWatch::HostWatch(pid_t pid, const std::set<pid_t>& pkb) : pid_(pid), pkb_(pkb) { restart(); }

void HostWatch::restart() {
  last_ = launch::thread_times(pid_);
  t_ = std::chrono::steady_clock::now();
}

void HostWatch::ended(eval::interleave::Side side) {
  auto now_t = std::chrono::steady_clock::now();
  std::map<pid_t, launch::ThreadTimes> now = launch::thread_times(pid_);
  eval::HostShare& h = side == eval::interleave::Side::reference ? reference : candidate;
  h.wall_ms += std::chrono::duration<double, std::milli>(now_t - t_).count();
  for (auto& [tid, x] : now) {
    auto it = last_.find(tid);
    const launch::ThreadTimes before = it == last_.end() ? launch::ThreadTimes{} : it->second;
    double run = (x.run_ns - before.run_ns) / 1e6, wait = (x.wait_ns - before.wait_ns) / 1e6;
    if (tid == pid_) {
      h.main_run_ms += run;
      h.main_wait_ms += wait;
    } else {
      (pkb_.count(tid) ? h.pkb_run_ms : h.new_threads_run_ms) += run;
    }
  }
  last_ = std::move(now);
  t_ = now_t;
}

}  // namespace pkb::jobs
