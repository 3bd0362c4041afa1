#include "report/compare.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "io/text.hpp"

namespace pkb::report {

namespace {

// One problem at one W and size: pairs are made within it.
using PairInstance = std::tuple<std::string, int, std::string>;

PairInstance pair_instance(const Evaluation& e) { return {e.problem, e.world, e.size}; }

std::string signed_percent(double ratio) { return io::format("%+.1f%%", 100 * (ratio - 1)); }

// A failure's message for a one-line reason, short.
std::string first_words(const std::string& message) {
  std::string m = message.substr(0, message.find('\n'));
  return m.size() > 160 ? m.substr(0, 157) + "..." : m;
}

// Why a pair of correct evaluations has no speed comparison: the timing notes of each side.
std::string uncounted_why(const Evaluation& then, const Evaluation& now) {
  auto note = [](const Evaluation& e) { return e.timing_note.empty() ? std::string("counts") : e.timing_note; };
  std::string a = note(then), b = note(now);
  return "timing does not count for speed (" + (a == b ? a : "then " + a + ", now " + b) + "): verdicts compared only";
}

// What a field of the runs' environment is, per evaluation, and what differing means.
struct EnvField {
  const char* name;
  std::function<std::string(const Evaluation&)> value;
  const char* consequence;
};

const char* const kSpeedMayDiffer = "speed changes may come from this, not from the candidates";
const char* const kOnlySame = "only pairs evaluated at the same one are compared";

const std::vector<EnvField>& env_fields() {
  static const std::vector<EnvField> fields = {
      {"hardware profile", [](const Evaluation& e) { return e.hardware_profile; }, kSpeedMayDiffer},
      {"GPU", [](const Evaluation& e) { return e.gpu; }, kSpeedMayDiffer},
      {"device", [](const Evaluation& e) { return e.device == "?" ? "" : e.device; }, kSpeedMayDiffer},
      {"CUDA driver", [](const Evaluation& e) { return e.cuda_driver; }, kSpeedMayDiffer},
      {"CUDA runtime", [](const Evaluation& e) { return e.cuda_runtime; }, kSpeedMayDiffer},
      {"torch", [](const Evaluation& e) { return e.torch; }, kSpeedMayDiffer},
      {"NCCL", [](const Evaluation& e) { return e.nccl; }, kSpeedMayDiffer},
      {"pkb version", [](const Evaluation& e) { return e.pkb_version; }, kSpeedMayDiffer},
      {"dtype", [](const Evaluation& e) { return e.dtype; }, kSpeedMayDiffer},
      {"trials, warmup, iters",
       [](const Evaluation& e) {
         auto n = [](const std::optional<int>& v) { return v ? std::to_string(*v) : std::string("default"); };
         return n(e.trials) + ", " + n(e.warmup) + ", " + n(e.iters);
       },
       kSpeedMayDiffer},
      {"pkb sweep --parallel",
       [](const Evaluation& e) { return std::to_string(e.parallel); }, kSpeedMayDiffer},
      {"size", [](const Evaluation& e) { return e.size; }, kOnlySame},
      {"W", [](const Evaluation& e) { return e.world ? std::to_string(e.world) : std::string(); }, kOnlySame},
  };
  return fields;
}

std::string listed(const std::set<std::string>& values) {
  std::string out;
  for (auto& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}

// A warning for each field whose values differ between the runs (fields one side did not
// record are left alone: older results lack some).
std::vector<std::string> environment_warnings(const Results& then, const Results& now) {
  std::vector<std::string> out;
  for (auto& f : env_fields()) {
    std::set<std::string> a, b;
    for (auto& e : then.evaluations)
      if (auto v = f.value(e); !v.empty()) a.insert(v);
    for (auto& e : now.evaluations)
      if (auto v = f.value(e); !v.empty()) b.insert(v);
    if (a.empty() || b.empty() || a == b) continue;
    out.push_back("then and now differ in " + std::string(f.name) + " (then " + listed(a) + "; now " + listed(b) +
                  "): " + f.consequence);
  }
  return out;
}

RunSide side_of(const Results& r) {
  RunSide s;
  s.files = r.files;
  s.evaluations = r.evaluations.size();
  for (auto& e : r.evaluations) {
    if (e.time.empty()) continue;
    if (s.first_time.empty() || e.time < s.first_time) s.first_time = e.time;
    if (e.time > s.last_time) s.last_time = e.time;
  }
  return s;
}

bool listed_before(const Evaluation& a, const Evaluation& b) {
  return std::make_tuple(a.problem_id, a.problem, a.world, a.size, a.path, a.sample) <
         std::make_tuple(b.problem_id, b.problem, b.world, b.size, b.path, b.sample);
}

}  // namespace

const char* change_name(Change c) {
  switch (c) {
    case Change::broke: return "broke";
    case Change::fixed: return "fixed";
    case Change::verdict_changed: return "verdict_changed";
    case Change::regression: return "regression";
    case Change::improvement: return "improvement";
    case Change::unchanged: return "unchanged";
    case Change::not_counting: return "not_counting";
    case Change::no_interval: return "no_interval";
  }
  return "?";
}

std::optional<Interval> interval_of(const Evaluation& e) {
  if (e.interval_low && e.interval_high) {
    double level = e.interval_level.value_or(0.95);
    return Interval{*e.interval_low, *e.interval_high, io::format("%g%% CI", 100 * level)};
  }
  if (e.speedup_low && e.speedup_high) return Interval{*e.speedup_low, *e.speedup_high, "quartiles"};
  return std::nullopt;
}

size_t Comparison::count(Change c) const {
  return static_cast<size_t>(std::count_if(pairs.begin(), pairs.end(), [&](const Pair& p) { return p.change == c; }));
}

void judge_pair(Pair& p, const CompareSettings& settings) {
  const Evaluation &a = p.then, &b = p.now;
  p.then_interval = interval_of(a);
  p.now_interval = interval_of(b);
  if (a.correct() && b.correct() && a.speedup && b.speedup && *a.speedup > 0) p.ratio = *b.speedup / *a.speedup;
  if (a.verdict != b.verdict) {
    std::string what = a.verdict + " -> " + b.verdict;
    std::string said = b.message.empty() ? "" : ": " + first_words(b.message);
    if (a.correct()) {
      p.change = Change::broke;
      p.why = what + said;
    } else if (b.verdict == "integrity_violation") {
      p.change = Change::broke;
      p.why = "a new integrity_violation (was " + a.verdict + ")" + said;
    } else if (b.correct()) {
      p.change = Change::fixed;
      p.why = what;
    } else {
      p.change = Change::verdict_changed;
      p.why = what + said;
    }
    return;
  }
  if (!a.correct()) {
    p.change = Change::unchanged;
    p.why = a.verdict + " both times";
    return;
  }
  if (!a.timing_counts || !b.timing_counts) {
    p.change = a.speedup || b.speedup ? Change::not_counting : Change::unchanged;
    p.why = p.change == Change::unchanged ? "correct both times, untimed" : uncounted_why(a, b);
    return;
  }
  if (!p.ratio) {  // a speedup of 0 (a candidate median of 0): nothing to divide by
    p.change = Change::unchanged;
    p.why = "correct both times; no speedup then to compare with";
    return;
  }
  if (!p.then_interval || !p.now_interval) {
    p.change = Change::no_interval;
    p.why = signed_percent(*p.ratio) + std::string(", but no interval ") + (p.then_interval ? "now" : "then") +
            " to tell it from noise";
    return;
  }
  const double t = settings.threshold;
  bool apart_down = p.now_interval->high < p.then_interval->low;
  bool apart_up = p.now_interval->low > p.then_interval->high;
  std::string pct = signed_percent(*p.ratio);
  if (apart_down && *p.ratio < 1 - t) {
    p.change = Change::regression;
    p.why = pct + ", the intervals apart";
  } else if (apart_up && *p.ratio > 1 + t) {
    p.change = Change::improvement;
    p.why = pct + ", the intervals apart";
  } else {
    p.change = Change::unchanged;
    p.why = pct + (apart_down || apart_up ? ": within the " + io::format("%g%%", 100 * t) + " threshold"
                                          : ": the intervals overlap");
  }
}

Comparison compare(const Results& then, const Results& now, const CompareSettings& settings) {
  Comparison c;
  c.settings = settings;
  c.then = side_of(then);
  c.now = side_of(now);
  c.warnings = environment_warnings(then, now);

  std::map<PairInstance, std::vector<const Evaluation*>> before, after;
  for (auto& e : then.evaluations) before[pair_instance(e)].push_back(&e);
  for (auto& e : now.evaluations) after[pair_instance(e)].push_back(&e);

  // Within an instance: the same file first (sha256 and path), then the same source moved
  // or copied (sha256), then the same path edited; each evaluation in one pair at most.
  using Match = std::function<bool(const Evaluation&, const Evaluation&)>;
  const std::vector<std::pair<std::string, Match>> stages = {
      {"sha256", [](auto& a, auto& b) { return !a.sha256.empty() && a.sha256 == b.sha256 && a.path == b.path; }},
      {"sha256", [](auto& a, auto& b) { return !a.sha256.empty() && a.sha256 == b.sha256; }},
      {"path", [](auto& a, auto& b) { return !a.path.empty() && a.path == b.path; }},
  };
  for (auto& [inst, olds] : before) {
    auto it = after.find(inst);
    if (it == after.end()) {
      for (auto* e : olds) c.only_then.push_back(*e);
      continue;
    }
    const auto& news = it->second;
    std::vector<bool> old_used(olds.size()), new_used(news.size());
    for (auto& [by, match] : stages)
      for (size_t i = 0; i < olds.size(); ++i) {
        if (old_used[i]) continue;
        for (size_t j = 0; j < news.size(); ++j) {
          if (new_used[j] || !match(*olds[i], *news[j])) continue;
          Pair p;
          p.then = *olds[i];
          p.now = *news[j];
          p.matched_by = by;
          judge_pair(p, settings);
          if (p.then.path != p.now.path) p.why += " (then " + p.then.path + ")";
          c.pairs.push_back(std::move(p));
          old_used[i] = new_used[j] = true;
          break;
        }
      }
    for (size_t i = 0; i < olds.size(); ++i)
      if (!old_used[i]) c.only_then.push_back(*olds[i]);
    for (size_t j = 0; j < news.size(); ++j)
      if (!new_used[j]) c.only_now.push_back(*news[j]);
  }
  for (auto& [inst, news] : after)
    if (!before.count(inst))
      for (auto* e : news) c.only_now.push_back(*e);

  // Most urgent first; the worst regression and the best improvement at the top of theirs.
  auto severity = [](const Pair& p) {
    if (p.change == Change::regression) return p.ratio.value_or(1);
    if (p.change == Change::improvement) return -p.ratio.value_or(1);
    return 0.0;
  };
  std::stable_sort(c.pairs.begin(), c.pairs.end(), [&](const Pair& a, const Pair& b) {
    if (a.change != b.change) return a.change < b.change;
    if (severity(a) != severity(b)) return severity(a) < severity(b);
    return listed_before(a.now, b.now);
  });
  std::stable_sort(c.only_then.begin(), c.only_then.end(), listed_before);
  std::stable_sort(c.only_now.begin(), c.only_now.end(), listed_before);

  if (c.pairs.empty())
    c.warnings.push_back("no candidate was evaluated in both runs (the same problem, W and size, and the same source "
                         "or path): nothing is compared");
  if (!c.only_then.empty() || !c.only_now.empty())
    c.warnings.push_back(std::to_string(c.only_then.size()) + " evaluation" + (c.only_then.size() == 1 ? "" : "s") +
                         " only then and " + std::to_string(c.only_now.size()) + " only now are not compared (listed "
                         "under 'Not in both')");
  return c;
}

}  // namespace pkb::report
