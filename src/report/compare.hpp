// Two runs compared (`pkb report --against THEN NOW`): every candidate evaluated in both,
// its verdict and speedup then and now, and what changed enough to act on. A pair is one
// problem at one W and size, its candidate matched by source hash (sha256), else by path.
// A speed change is flagged only where the two intervals separate and the change passes a
// threshold; verdict changes always count. Only timings that count for speed
// (eval::timing_counts: CUDA, a GPU per rank, nothing in doubt) are compared for speed; the
// others are compared for their verdicts alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/results.hpp"

namespace pkb::report {

struct CompareSettings {
  // A speed change is flagged when now's speedup is below then's by more than this share
  // (a regression) or above it by more (an improvement), and the intervals separate.
  double threshold = 0.05;
};

// A speedup's uncertainty: pkb eval's recorded interval (speedup_interval) where there is
// one, else the quartile spread [reference Q1 / candidate Q3, reference Q3 / candidate Q1].
struct Interval {
  double low = 0, high = 0;
  std::string kind;  // "95% CI" (the recorded level) or "quartiles"
};
std::optional<Interval> interval_of(const Evaluation& e);

// What happened to a pair, most urgent first (the order of the report's lists).
enum class Change {
  broke,           // was correct and is not, or a new integrity_violation
  fixed,           // was not correct and is
  verdict_changed, // one failure became another (wrong -> timeout)
  regression,      // slower beyond the intervals and the threshold
  improvement,     // faster beyond the intervals and the threshold
  unchanged,       // the same verdict; any speed change within the intervals or the threshold
  not_counting,    // correct both times, but a timing that says nothing about speed (CPU device, ...)
  no_interval,     // both timings count, but one has no interval to tell noise from change
};
const char* change_name(Change c);  // "broke", "fixed", "verdict_changed", ...

struct Pair {
  Evaluation then, now;
  std::string matched_by;        // "sha256" or "path"
  Change change = Change::unchanged;
  std::optional<double> ratio;   // now's speedup over then's, where both are correct and timed
  std::optional<Interval> then_interval, now_interval;
  std::string why;               // one line: what changed, or why it is not flagged
};

// One side's results as the comparison names them.
struct RunSide {
  std::vector<std::string> files;
  size_t evaluations = 0;
  std::string first_time, last_time;
};

struct Comparison {
  CompareSettings settings;
  RunSide then, now;
  std::vector<std::string> warnings;  // what differs between the runs (hardware, software, sizes, ...)
  std::vector<Pair> pairs;            // by Change, then problem id, W, size, path
  std::vector<Evaluation> only_then, only_now;  // not matched: not compared
  size_t count(Change c) const;
  size_t regressions() const { return count(Change::broke) + count(Change::regression); }
};

// Pairs the evaluations of `then` and `now` (same problem, W and size; the same sha256, the
// same path and sha256 first, else the same path) and judges each pair.
Comparison compare(const Results& then, const Results& now, const CompareSettings& settings = {});

// One pair judged (compare() calls it for each): the change and why.
void judge_pair(Pair& p, const CompareSettings& settings);

// The comparison for the terminal, as Markdown, as a self-contained HTML page (a chart of
// the speed changes; `page_dir` as render_html's) and as JSON (schema pkb.comparison/1),
// each the same sections in the same order: what was compared, warnings, verdict changes,
// speed changes, every pair, and what is not in both. The terminal shows the first
// `kTerminalRows` rows of the long lists; the files hold every one.
inline constexpr size_t kTerminalRows = 40;
std::string render_comparison_text(const Comparison& c);
std::string render_comparison_markdown(const Comparison& c);
std::string render_comparison_html(const Comparison& c, const std::string& page_dir = "");
nlohmann::json render_comparison_json(const Comparison& c);

}  // namespace pkb::report
