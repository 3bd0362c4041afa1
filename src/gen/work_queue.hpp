// How pkb generate and pkb agent share out their samples among a few threads.
#pragma once

#include <exception>
#include <mutex>
#include <string>
#include <vector>

namespace pkb::gen {

// Run on each thread: takes the next of `jobs` in order (`next`, under `mu`) until none is
// left or `done()` (under `mu`); a job for which `stopped(job)` (under `mu`: its model has
// stopped; the callback counts it) is passed over. The first exception from `run` is pkb's
// own failure: its message goes to `fatal` and `halt()` stops every thread.
template <class Job, class Done, class Stopped, class Run, class Halt>
void work_through(const std::vector<Job>& jobs, std::mutex& mu, size_t& next, std::string& fatal, Done done,
                  Stopped stopped, Run run, Halt halt) {
  for (;;) {
    const Job* job = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (done() || next == jobs.size()) return;
      job = &jobs[next++];
      if (stopped(*job)) continue;
    }
    try {
      run(*job);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu);
      if (fatal.empty()) fatal = e.what();
      halt();
    }
  }
}

}  // namespace pkb::gen
