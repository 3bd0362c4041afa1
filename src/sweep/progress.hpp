// A sweep's progress as one line for a terminal: evaluations done of the total, failures so
// far, an estimate of the time left, compilations, and what runs now. Pure: the caller
// keeps the clock and draws the line (cli/cmd_sweep.cpp, on stderr, only on a terminal).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pkb::sweep {

struct Progress {
  size_t total = 0, done = 0;       // evaluations this run will make, and those ended
  size_t to_build = 0, built = 0;   // distinct candidates to compile, and those compiled
  std::map<std::string, int> verdicts;  // of those ended
  double elapsed_s = 0;             // now, since the first evaluation started
  double elapsed_at_last_end_s = 0;  // when the last evaluation ended, likewise
  std::vector<std::string> running;  // what runs now, by name

  size_t failed() const;  // ended with any verdict but correct
  // The time left at the pace so far: seconds per evaluation ended (evaluations side by side
  // share that time) times those left, less what has passed since the last ended, so the
  // estimate counts down between them; none before the first evaluation ends.
  std::optional<double> seconds_left() const;
  // "[#####.....] 5/20 | 2 failed | ~3 min left | built 8/20 | coll_allreduce W=4 m/sample_0 (+1 more)",
  // the bar `width` characters wide.
  std::string line(int width = 30) const;
};

// A duration as people read it: "45 s", "12 min", "2 h 05 min".
std::string duration_text(double seconds);

}  // namespace pkb::sweep
