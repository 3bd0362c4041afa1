#include <algorithm>
#include <cmath>

#include "report/compare.hpp"
#include "report/document.hpp"

// Named, so that no helper here meets one of render.cpp's in a unity batch.
namespace pkb::report::comparison_page {

namespace {

using namespace doc;
using json = nlohmann::json;

constexpr size_t kMostChartRows = 40;

bool is_verdict_change(Change c) { return c == Change::broke || c == Change::fixed || c == Change::verdict_changed; }
bool is_flagged_speed(Change c) { return c == Change::regression || c == Change::improvement; }

std::string side_line(const RunSide& s) {
  std::string files;
  for (auto& f : s.files) files += (files.empty() ? "" : ", ") + f;
  std::string when = s.first_time.empty() ? "" : s.first_time == s.last_time ? ", " + s.first_time
                                                                             : ", " + s.first_time + " to " + s.last_time;
  return files + " (" + std::to_string(s.evaluations) + " evaluation" + (s.evaluations == 1 ? "" : "s") + when + ")";
}

std::string outcome_line(const Comparison& c) {
  size_t broke = c.count(Change::broke), slower = c.count(Change::regression);
  std::string out = c.regressions() == 0 ? "no regression"
                                         : std::to_string(c.regressions()) + " regression" +
                                               (c.regressions() == 1 ? "" : "s") + " (" + std::to_string(broke) +
                                               " verdict, " + std::to_string(slower) + " speed)";
  if (size_t n = c.count(Change::improvement)) out += ", " + std::to_string(n) + " faster";
  if (size_t n = c.count(Change::fixed)) out += ", " + std::to_string(n) + " fixed";
  if (size_t n = c.count(Change::verdict_changed)) out += ", " + std::to_string(n) + " other verdict change" + (n == 1 ? "" : "s");
  return out;
}

Section header(const Comparison& c) {
  Section sec{"pkb report --against", 1, "header"};
  size_t by_hash = static_cast<size_t>(
      std::count_if(c.pairs.begin(), c.pairs.end(), [](const Pair& p) { return p.matched_by == "sha256"; }));
  sec.fields = {
      {"then", {side_line(c.then)}},
      {"now", {side_line(c.now)}},
      {"pairs", {std::to_string(c.pairs.size()) + " compared (" + std::to_string(by_hash) + " by source hash, " +
                 std::to_string(c.pairs.size() - by_hash) + " by path); " + std::to_string(c.only_then.size()) +
                 " only then, " + std::to_string(c.only_now.size()) + " only now"}},
      {"threshold", {format("%g%%", 100 * c.settings.threshold) +
                     ": a speed change is flagged where the intervals separate and it passes this"}},
      {"outcome", {outcome_line(c)}},
      {"report made", {now_utc()}}};
  return sec;
}

Section warnings(const Comparison& c) {
  Section sec{"Warnings", 2, "warnings"};
  sec.items = c.warnings;
  return sec;
}

// A speedup as compared: with its interval where its timing counts, in parentheses where
// it says nothing about speed.
std::string speedup_text(const Evaluation& e, const std::optional<Interval>& interval) {
  if (!e.speedup) return kNone;
  if (!e.timing_counts) return "(" + times(e.speedup) + ")";
  return times(e.speedup) + (interval ? " [" + format("%.2f", interval->low) + "-" + format("%.2f", interval->high) + "]" : "");
}

// The candidate as now's results file shows it (where it sat then is in the pair's why).
std::string candidate_of(const Pair& p) { return p.now.shown_path.empty() ? p.now.path : p.now.shown_path; }

std::string where(const Evaluation& e) {
  return e.problem + " W=" + std::to_string(e.world) + (e.size == "default" ? "" : " " + e.size);
}

// Rows of pairs; `most` of them at most (the terminal's share), saying how many more.
Section pairs_section(const std::string& title, const std::string& css, const std::vector<const Pair*>& pairs,
                      size_t most, const std::string& none) {
  Section sec{title, 2, css};
  if (pairs.empty()) {
    sec.intro = none;
    return sec;
  }
  Table t;
  t.head = {"change", "problem", "W", "size", "candidate", "verdict", "why", "speedup then", "speedup now"};
  t.left = 7;
  t.paths = {4};
  t.messages = {6};
  for (auto* p : pairs) {
    if (t.rows.size() == most) {
      sec.items.push_back(std::to_string(pairs.size() - most) +
                          " more: pkb report --against ... --md or --html lists them all");
      break;
    }
    if (!p->now.abs_path.empty()) t.links[{t.rows.size(), 4}] = p->now.abs_path;
    std::string verdict = p->then.verdict == p->now.verdict ? p->now.verdict : p->then.verdict + " -> " + p->now.verdict;
    t.rows.push_back({change_name(p->change), p->now.problem, std::to_string(p->now.world), p->now.size,
                      candidate_of(*p), verdict, p->why, speedup_text(p->then, p->then_interval),
                      speedup_text(p->now, p->now_interval)});
  }
  sec.table = t;
  return sec;
}

std::vector<const Pair*> pairs_where(const Comparison& c, bool (*keep)(Change)) {
  std::vector<const Pair*> out;
  for (auto& p : c.pairs)
    if (keep(p.change)) out.push_back(&p);
  return out;
}

bool any_change(Change) { return true; }

Section not_in_both(const Comparison& c, size_t most) {
  Section sec{"Not in both", 2, "unpaired"};
  if (c.only_then.empty() && c.only_now.empty()) {
    sec.intro = "Every evaluation of each run has its pair in the other.";
    return sec;
  }
  Table t;
  t.head = {"run", "problem", "W", "size", "candidate", "verdict"};
  t.left = 6;
  t.paths = {4};
  size_t all = c.only_then.size() + c.only_now.size();
  for (auto* side : {&c.only_then, &c.only_now})
    for (auto& e : *side) {
      if (t.rows.size() == most) break;
      if (!e.abs_path.empty()) t.links[{t.rows.size(), 4}] = e.abs_path;
      t.rows.push_back({side == &c.only_then ? "then" : "now", e.problem, std::to_string(e.world), e.size,
                        e.shown_path.empty() ? e.path : e.shown_path, e.verdict});
    }
  if (t.rows.size() < all) sec.items.push_back(std::to_string(all - t.rows.size()) + " more: --md or --html lists them all");
  sec.table = t;
  sec.intro = "Evaluated in one run only (another problem, W or size, or a candidate whose source hash and path both "
              "changed): not compared.";
  return sec;
}

const char* const kLegend =
    "Pairs: one problem at one W and size, the candidate matched by its source hash, else by its path. Verdict "
    "changes come first: broke (was correct, or a new integrity_violation), fixed, verdict_changed (one failure "
    "became another). A speed change is a regression or an improvement only where the intervals then and now "
    "separate (each speedup's recorded confidence interval, else its quartile spread [reference Q1 / candidate Q3 - "
    "reference Q3 / candidate Q1]) and it passes the threshold. Speedups in parentheses do not count for speed "
    "(CPU device, ranks sharing a GPU, timing in doubt): their pairs are compared for verdicts only.";

// Every pair whose timings both count, as now's speedup over then's on a log scale: the
// flagged ones, then the largest other changes, at most kMostChartRows bars.
std::string change_chart(const Comparison& c) {
  std::vector<const Pair*> flagged, others;
  for (auto& p : c.pairs) {
    if (!p.ratio || *p.ratio <= 0 || !p.then.timing_counts || !p.now.timing_counts) continue;
    (is_flagged_speed(p.change) ? flagged : others).push_back(&p);
  }
  std::stable_sort(others.begin(), others.end(), [](const Pair* a, const Pair* b) {
    return std::abs(std::log(*a->ratio)) > std::abs(std::log(*b->ratio));
  });
  std::vector<const Pair*> shown = flagged;
  for (auto* p : others)
    if (shown.size() < std::max(kMostChartRows, flagged.size())) shown.push_back(p);
  if (shown.empty()) return "<p>No pair has timings that count for speed both times: nothing to chart.</p>\n";
  std::vector<Bar> bars;
  for (auto* p : shown) {
    Bar b;
    std::string file = p->now.path.substr(p->now.path.rfind('/') + 1);
    b.label = where(p->now) + " " + file;
    b.label_title = where(p->now) + ": " + candidate_of(*p);
    b.value = *p->ratio;
    if (p->then_interval && p->now_interval && p->then_interval->high > 0 && p->then_interval->low > 0) {
      b.low = p->now_interval->low / p->then_interval->high;
      b.high = p->now_interval->high / p->then_interval->low;
    }
    std::string what = is_flagged_speed(p->change)          ? change_name(p->change)
                       : p->change == Change::no_interval ? "no interval, not flagged"
                                                          : "not flagged";
    b.right = format("%+.1f%% ", 100 * (*p->ratio - 1)) + what + " (" + times(p->then.speedup) + " -> " +
              times(p->now.speedup) + ")";
    b.right_title = b.right + ": " + p->why;
    bars.push_back(b);
  }
  size_t left_out = flagged.size() + others.size() - shown.size();
  return log_chart(bars, "speedup now over then, per pair") +
         "<p class=\"legend\">Now's speedup over then's, per pair whose timings count both times, on a log scale from "
         "the dashed 1x line (no change): blue when faster now, amber when slower. The line under a bar spans now's "
         "interval over then's (its ends: now's low over then's high, now's high over then's low); a regression or "
         "an improvement is flagged only where it misses 1x and the change passes the threshold. Flagged pairs come "
         "first, then the largest other changes" +
         (left_out ? ", " + std::to_string(left_out) + " smaller ones left out (the table below has every pair)"
                   : std::string()) +
         ".</p>\n";
}

std::vector<Section> body(const Comparison& c, size_t most) {
  std::vector<Section> out;
  out.push_back(pairs_section("Verdict changes", "verdicts", pairs_where(c, is_verdict_change), most,
                              "No verdict changed."));
  out.push_back(pairs_section("Speed changes", "speed", pairs_where(c, is_flagged_speed), most,
                              "No speed change passes the threshold with the intervals apart."));
  Section all = pairs_section("Every pair", "pairs", pairs_where(c, any_change), most, "No pair.");
  all.note = kLegend;
  out.push_back(all);
  out.push_back(not_in_both(c, most));
  return out;
}

json interval_json(const std::optional<Interval>& i) {
  return i ? json{{"low", i->low}, {"high", i->high}, {"kind", i->kind}} : json();
}

json side_json(const Evaluation& e, const std::optional<Interval>& i) {
  auto opt = [](std::optional<double> v) { return v ? json(*v) : json(); };
  return {{"verdict", e.verdict},         {"message", e.message},         {"speedup", opt(e.speedup)},
          {"interval", interval_json(i)}, {"timing_counts", e.timing_counts}, {"timing_note", e.timing_note},
          {"path", e.path},               {"sha256", e.sha256},           {"run", e.run},
          {"sample", e.sample},           {"file", e.file}};
}

json unpaired_json(const std::vector<Evaluation>& list) {
  json out = json::array();
  for (auto& e : list)
    out.push_back({{"problem", e.problem}, {"world", e.world}, {"size", e.size}, {"path", e.path},
                   {"verdict", e.verdict}});
  return out;
}

}  // namespace

std::string text(const Comparison& c) {
  std::string out = "pkb report --against\n" + fields_text(header(c).fields);
  if (!c.warnings.empty()) out += section_text(warnings(c));
  for (auto& sec : body(c, kTerminalRows)) out += section_text(sec);
  return out;
}

std::string markdown(const Comparison& c) {
  std::string out = "# pkb report --against\n\n" + fields_markdown(header(c).fields);
  if (!c.warnings.empty()) out += section_markdown(warnings(c));
  for (auto& sec : body(c, c.pairs.size() + c.only_then.size() + c.only_now.size())) out += section_markdown(sec);
  return out;
}

std::string html(const Comparison& c, const std::string& page_dir) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>pkb report "
                    "--against</title>\n<style>\n" + style() + "\n</style>\n</head>\n<body>\n";
  out += section_html(header(c), page_dir);
  if (!c.warnings.empty()) out += section_html(warnings(c), page_dir);
  std::vector<Section> sections = body(c, c.pairs.size() + c.only_then.size() + c.only_now.size());
  for (size_t i = 0; i < sections.size(); ++i)
    out += section_html(sections[i], page_dir, sections[i].css == "speed" ? change_chart(c) : "");
  return out + "</body>\n</html>\n";
}

json as_json(const Comparison& c) {
  json counts = {{"pairs", c.pairs.size()}, {"only_then", c.only_then.size()}, {"only_now", c.only_now.size()}};
  for (Change ch : {Change::broke, Change::fixed, Change::verdict_changed, Change::regression, Change::improvement,
                    Change::unchanged, Change::not_counting, Change::no_interval})
    counts[change_name(ch)] = c.count(ch);
  auto side = [](const RunSide& s) {
    return json{{"files", s.files},
                {"evaluations", s.evaluations},
                {"first_time", s.first_time.empty() ? json() : json(s.first_time)},
                {"last_time", s.last_time.empty() ? json() : json(s.last_time)}};
  };
  json pairs = json::array();
  for (auto& p : c.pairs)
    pairs.push_back({{"change", change_name(p.change)},
                     {"why", p.why},
                     {"problem", p.now.problem},
                     {"problem_id", p.now.problem_id},
                     {"world", p.now.world},
                     {"size", p.now.size},
                     {"matched_by", p.matched_by},
                     {"ratio", p.ratio ? json(*p.ratio) : json()},
                     {"then", side_json(p.then, p.then_interval)},
                     {"now", side_json(p.now, p.now_interval)}});
  return {{"schema", "pkb.comparison/1"},
          {"threshold", c.settings.threshold},
          {"then", side(c.then)},
          {"now", side(c.now)},
          {"warnings", c.warnings},
          {"counts", counts},
          {"regressions", c.regressions()},
          {"pairs", pairs},
          {"only_then", unpaired_json(c.only_then)},
          {"only_now", unpaired_json(c.only_now)}};
}

}  // namespace pkb::report::comparison_page

namespace pkb::report {

std::string render_comparison_text(const Comparison& c) { return comparison_page::text(c); }
std::string render_comparison_markdown(const Comparison& c) { return comparison_page::markdown(c); }
std::string render_comparison_html(const Comparison& c, const std::string& page_dir) {
  return comparison_page::html(c, page_dir);
}
nlohmann::json render_comparison_json(const Comparison& c) { return comparison_page::as_json(c); }

}  // namespace pkb::report
