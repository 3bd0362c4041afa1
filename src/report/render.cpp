#include "report/render.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <ctime>
#include <filesystem>
#include <set>
#include <sstream>

#include "io/text.hpp"
#include "report/document.hpp"
#include "spec/spec.hpp"

namespace pkb::report {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using namespace doc;

// A speedup's uncertainty: its confidence interval as pkb eval recorded it, "[2.38-2.51]",
// else (results from before there was one) its quartile spread, "~[2.10-3.67]".
std::string spread(const Evaluation& e) {
  if (e.interval_low && e.interval_high)
    return "[" + format("%.2f", *e.interval_low) + "-" + format("%.2f", *e.interval_high) + "]";
  if (!e.speedup_low || !e.speedup_high) return kNone;
  return "~[" + format("%.2f", *e.speedup_low) + "-" + format("%.2f", *e.speedup_high) + "]";
}

// A speedup as the report shows it: with its spread when the timing counts, in parentheses
// when it says nothing about speed.
std::string speedup_cell(const Evaluation& e) {
  if (!e.speedup) return kNone;
  if (!e.timing_counts) return "(" + times(e.speedup) + ")";
  return times(e.speedup) + " " + spread(e);
}

// --- The sections ---------------------------------------------------------------------

std::string notes(const Summary& s, const Results& r) {
  std::string n = std::to_string(s.evaluations) + " evaluation" + (s.evaluations == 1 ? "" : "s") + " from " +
                  std::to_string(r.files.size()) + " file" + (r.files.size() == 1 ? "" : "s");
  if (r.duplicates) n += "; " + std::to_string(r.duplicates) + " repeated evaluation(s) counted once (the later line)";
  if (r.bad_lines) n += "; " + std::to_string(r.bad_lines) + " line(s) skipped (not pkb.eval/1)";
  return n + ".";
}

// The software line: "pkb 0.1.0 (commit abc) · torch 2.11.0 · NCCL 2.28.9 · CUDA runtime 13.0 · driver 13.0".
std::string software_line(const Header& h) {
  std::vector<std::string> parts;
  if (!h.pkb_versions.empty()) {
    std::string p = "pkb " + joined(h.pkb_versions);
    std::vector<std::string> about;
    if (!h.commits.empty()) about.push_back((h.commits.size() == 1 ? "commit " : "commits ") + joined(h.commits));
    if (h.without_commit && !h.commits.empty())
      about.push_back(std::to_string(h.without_commit) + " result" + (h.without_commit == 1 ? "" : "s") +
                      " without a commit");
    for (size_t i = 0; i < about.size(); ++i) p += (i ? "; " : " (") + about[i];
    parts.push_back(about.empty() ? p : p + ")");
  }
  if (!h.torch.empty()) parts.push_back("torch " + joined(h.torch));
  if (!h.nccl.empty()) parts.push_back("NCCL " + joined(h.nccl));
  if (!h.cuda_runtime.empty()) parts.push_back("CUDA runtime " + joined(h.cuda_runtime));
  if (!h.cuda_driver.empty()) parts.push_back("driver " + joined(h.cuda_driver));
  std::string out;
  for (auto& p : parts) out += (out.empty() ? "" : " · ") + p;
  return out.empty() ? kNone : out;
}

// Seeds, each once: a few are listed, many are counted (the JSON report lists them all).
std::string seeds_line(const Header& h) {
  if (h.seeds.size() <= 3) return joined(h.seeds);
  return std::to_string(h.seeds.size()) + " distinct seeds (pkb report --json lists them)";
}

// Each distinct setting of trials, warmup and iters on a line of its own, with how many
// evaluations ran with it, the commonest first.
Lines settings_lines(const Header& h) {
  std::vector<std::pair<int, std::string>> by_count;
  for (auto& [setting, n] : h.settings) by_count.emplace_back(-n, setting);
  std::sort(by_count.begin(), by_count.end());
  Lines out;
  for (auto& [n, setting] : by_count) {
    std::string line = setting;
    if (h.settings.size() > 1) line += " (" + std::to_string(-n) + " evaluation" + (n == -1 ? "" : "s") + ")";
    out.push_back(line);
  }
  return out.empty() ? Lines{kNone} : out;
}

// Where the time budgets made fewer calls than the settings: how many evaluations, and the
// fewest calls any made.
Lines budget_lines(const Header& h) {
  if (h.fewest_iters < 0 && h.fewest_trials < 0) return {kNone};
  if (h.cut_by_budgets == 0) return {"every evaluation made the calls its settings name"};
  auto n = [](int v) { return v < 0 ? std::string(kNone) : std::to_string(v); };
  return {std::to_string(h.cut_by_budgets) + " evaluation" + (h.cut_by_budgets == 1 ? "" : "s") +
          " made fewer calls (time budgets); the fewest: " + n(h.fewest_trials) + " trials, " + n(h.fewest_warmup) +
          " warm-up, " + n(h.fewest_iters) + " timed calls"};
}

// What the results were run with: each field lists the distinct values found.
Section header_section(const Summary& s, const Results& r) {
  const Header& h = s.header;
  Section sec{"pkb report", 1, "header"};
  std::set<std::string> worlds;
  for (int w : h.worlds) worlds.insert(std::to_string(w));
  std::string when = h.first_time.empty() ? std::string(kNone)
                                          : h.first_time == h.last_time ? h.first_time : h.first_time + " to " + h.last_time;
  sec.fields = {{"results", {notes(s, r)}}};
  if (!r.skipped_files.empty()) {
    Lines left;
    for (auto& f : r.skipped_files) left.push_back(f.file + ": " + f.why);
    sec.fields.push_back({"left out", left});
  }
  std::vector<std::pair<std::string, Lines>> more = {{"software", {software_line(h)}},
                                                     {"device", {joined(h.devices)}},
                                                     {"hardware profile", {joined(h.profiles)}},
                                                     {"W", {joined(worlds)}},
                                                     {"size", {joined(h.sizes)}},
                                                     {"dtype", {joined(h.dtypes)}},
                                                     {"seed", {seeds_line(h)}},
                                                     {"trials, warmup, iters", settings_lines(h)},
                                                     {"calls made", budget_lines(h)},
                                                     {"evaluated", {when}},
                                                     {"report made", {now_utc()}}};
  sec.fields.insert(sec.fields.end(), more.begin(), more.end());
  return sec;
}

Section warnings_section(const Summary& s) {
  Section sec{"Warnings", 2, "warnings"};
  sec.items = s.warnings;
  return sec;
}

std::vector<std::string> rate_cells(const Rates& r) {
  std::vector<std::string> cells = {std::to_string(r.evaluations), percent(r.compiled, r.evaluations),
                                    percent(r.correct, r.evaluations)};
  for (int f : r.fast) cells.push_back(percent(f, r.evaluations));
  cells.push_back(times(r.geomean_speedup));
  cells.push_back(percent(r.mean_roofline_fraction));
  cells.push_back(std::to_string(r.timed));
  return cells;
}

std::vector<std::string> rate_head() {
  std::vector<std::string> h = {"evaluations", "compiled", "correct"};
  for (double p : kSpeedupThresholds) h.push_back("fast_" + threshold(p));
  h.push_back("geo-mean speedup");
  h.push_back("roofline");
  h.push_back("timed");
  return h;
}

const char* const kRatesNote =
    "fast_p: correct and more than p times faster than the reference, by the speedup itself (the ratio of the "
    "medians): a speedup above p counts even where its 95% interval reaches below p (and one below p does not, "
    "though its interval reaches above); the tables give each interval. Geo-mean speedup and roofline (speed-of-light "
    "time / candidate time, mean): over correct candidates whose timing counts. timed: how many those are; only "
    "CUDA timings with a GPU per rank and nothing in doubt count (not the CPU device, not ranks sharing a GPU).";

Section runs_section(const Summary& s) {
  Section sec{"Leaderboard", 2, "runs"};
  sec.intro = kRankOrder;
  Table t;
  t.head = {"#", "run", "backend", "problems"};
  t.left = 3;
  for (auto& h : rate_head()) t.head.push_back(h);
  for (auto& r : s.runs) {
    std::vector<std::string> row = {std::to_string(r.rank), r.run, r.backend.empty() ? std::string(kNone) : r.backend,
                                    std::to_string(r.problems)};
    for (auto& c : rate_cells(r.rates)) row.push_back(c);
    t.rows.push_back(row);
  }
  sec.table = t;
  sec.note = kRatesNote;
  return sec;
}

Section samples_section(const Summary& s) {
  Section sec{"Over samples", 2, "samples"};
  Table t;
  t.head = {"run", "samples"};
  for (int k : s.ks) t.head.push_back("pass@" + std::to_string(k));
  for (double p : kSpeedupThresholds)
    for (int k : s.ks) t.head.push_back("fast_" + threshold(p) + "@" + std::to_string(k));
  for (auto& r : s.runs) {
    std::vector<std::string> row = {r.run, std::to_string(r.min_samples)};
    for (int k : s.ks) row.push_back(percent(r.pass_at_k.at(k)));
    for (size_t i = 0; i < kSpeedupThresholds.size(); ++i)
      for (int k : s.ks) row.push_back(percent(r.fast_at_k.at(k)[i]));
    t.rows.push_back(row);
  }
  sec.table = t;
  sec.note =
      "pass@k and fast_p@k: unbiased estimators over each run's samples of a problem (n samples, c of them good: "
      "1 - C(n-c,k)/C(n,k)), averaged over problems; shown where every problem has at least k samples.";
  return sec;
}

// pkb agent runs: pass@k and fast_p over samples after each turn (how fast models converge).
Table turns_table(const Summary& s) {
  Table t;
  t.head = {"run", "turn", "samples"};
  t.left = 1;
  for (int k : s.ks) t.head.push_back("pass@" + std::to_string(k));
  for (double p : kSpeedupThresholds) t.head.push_back("fast_" + threshold(p));
  for (auto& r : s.turns) {
    std::vector<std::string> row = {r.run, std::to_string(r.turn), std::to_string(r.samples)};
    for (int k : s.ks) row.push_back(percent(r.pass_at_k.at(k)));
    for (double f : r.fast) row.push_back(percent(f));
    t.rows.push_back(row);
  }
  return t;
}

const char* const kTurnsLegend =
    "pkb agent runs: a sample counts once, by its best turn, in every other table; here it counts as correct "
    "(fast) from the turn of its first correct (fast enough) candidate.";

std::vector<std::string> categories_in_order(const Summary& s) {
  std::vector<std::string> cats;
  for (auto& row : s.categories)
    if (cats.empty() || cats.back() != row.category) cats.push_back(row.category);
  return cats;
}

std::string category_title(const std::string& key) {
  std::string name = spec::category_name(key);
  return name.empty() ? key : key + ": " + name;
}

Section category_section(const Summary& s, const std::string& category) {
  Section sec{category_title(category), 3, "category"};
  Table t;
  t.head = {"run"};
  for (auto& h : rate_head()) t.head.push_back(h);
  for (auto& row : s.categories) {
    if (row.category != category) continue;
    std::vector<std::string> cells = {row.run};
    for (auto& c : rate_cells(row.rates)) cells.push_back(c);
    t.rows.push_back(cells);
  }
  sec.table = t;
  return sec;
}

// Problems down, runs across: correct of evaluated, and the fastest counted speedup.
Section matrix_section(const Summary& s) {
  Section sec{"Problems x runs", 2, "matrix"};
  Table t;
  t.head = {"problem", "W", "size"};
  t.left = 3;
  for (auto& run : s.run_names) {
    t.wrap.insert(t.head.size());  // many runs still fit: their cells break lines
    t.head.push_back(run);
  }
  for (auto& row : s.matrix) {
    std::vector<std::string> cells = {row.problem, std::to_string(row.world), row.size};
    for (auto& run : s.run_names) {
      auto it = row.cells.find(run);
      if (it == row.cells.end()) {
        cells.push_back(kNone);
        continue;
      }
      const MatrixCell& c = it->second;
      std::string cell = std::to_string(c.correct) + "/" + std::to_string(c.evaluated);
      if (c.fastest) cell += " " + speedup_cell(*c.fastest);
      else if (!c.notes.empty()) cell += " (" + joined(c.notes) + ")";
      cells.push_back(cell);
    }
    t.rows.push_back(cells);
  }
  sec.table = t;
  sec.note =
      "Each cell: correct of evaluated, then the fastest correct candidate's speedup whose timing counts, with its "
      "95% confidence interval [lo-hi] (a bootstrap over both sides' timed calls); results from before pkb recorded "
      "one show ~[reference Q1 / candidate Q3 - reference Q3 / candidate Q1], the speedup if both sides sat at "
      "opposite quartiles of their timed calls. A note in parentheses says why correct candidates have no timing that "
      "counts. Runs are in leaderboard order.";
  return sec;
}

Section best_section(const Summary& s) {
  Section sec{"Best candidate per problem", 2, "best"};
  Table t;
  t.head = {"problem", "W",      "size",         "correct",    "best run", "candidate", "speedup",
            "spread",  "repeats", "cand./ref. us", "busbw GB/s", "TFLOP/s",  "roofline"};
  t.left = 6;
  t.paths = {5};
  for (auto& b : s.best) {
    const Evaluation* e = b.best ? &*b.best : b.correct_uncounted ? &*b.correct_uncounted : nullptr;
    std::vector<std::string> row = {b.problem, std::to_string(b.world), b.size,
                                    std::to_string(b.correct) + "/" + std::to_string(b.evaluated), kNone, kNone};
    if (e) {
      row[4] = e->run + " s" + std::to_string(e->sample);
      row[5] = e->shown_path;
      if (!e->abs_path.empty()) t.links[{t.rows.size(), 5}] = e->abs_path;
    }
    std::string repeats = kNone;
    if (b.best && b.repeats > 1)
      repeats = std::to_string(b.repeats) + ": " + format("%.2f", *b.repeat_low) + "-" + format("%.2f", *b.repeat_high) + "x";
    bool counts = e && e->timing_counts;
    // A speedup that says nothing about speed is in parentheses, and its spread cell says why.
    std::string speed = !e || !e->speedup ? kNone : counts ? times(e->speedup) : "(" + times(e->speedup) + ")";
    std::string why = counts ? spread(*e) : e && e->speedup ? "(" + e->timing_note + ")" : kNone;
    std::string time = e && e->candidate_us ? us(e->candidate_us) + " / " + us(e->reference_us) : kNone;
    for (auto& c : std::vector<std::string>{speed, why, repeats, time, rate(counts ? e->busbw_gbps : std::nullopt),
                                            rate(counts ? e->tflops : std::nullopt),
                                            percent(counts ? e->roofline_fraction : std::nullopt)})
      row.push_back(c);
    t.rows.push_back(row);
  }
  sec.table = t;
  sec.note =
      "The best: the fastest correct candidate whose timing counts; a file evaluated more than once is ranked by the "
      "median of its speedups (repeats: how many, and their range), never by its luckiest run. A speedup in "
      "parentheses says nothing about speed; the spread column says why. cand./ref. us: the medians of candidate and "
      "reference. busbw: the candidate's bus bandwidth (collectives, as nccl-tests counts it); TFLOP/s: one rank's "
      "floating-point work (the spec's roofline flops) over the candidate's median; roofline: the speed-of-light "
      "time over the candidate's. Paths are relative to the results file's folder.";
  return sec;
}

// `most`: rows shown (the terminal's share of a large sweep); the files get every one.
Section failures_section(const Summary& s, size_t message_chars, size_t most) {
  Section sec{"Failures", 2, "failures"};
  Table t;
  t.head = {"problem", "W", "size", "run", "sample", "verdict", "message", "candidate"};
  t.left = 8;
  t.paths = {7};
  t.messages = {6};
  for (auto& e : s.failures) {
    if (t.rows.size() == most) {
      sec.items.push_back(std::to_string(s.failures.size() - most) + " more failures: pkb report --md or --html lists them all");
      break;
    }
    if (!e.abs_path.empty()) t.links[{t.rows.size(), 7}] = e.abs_path;
    t.rows.push_back({e.problem, std::to_string(e.world), e.size, e.run, std::to_string(e.sample), e.verdict,
                      shortened(e.message, message_chars), e.shown_path});
  }
  sec.table = t;
  if (s.failures.empty()) sec.note = "Every evaluation is correct.";
  return sec;
}

Section generation_section(const Results& r) {
  Section sec{"Generation", 2, "generation"};
  Table t;
  t.head = {"run", "requests", "ok", "no code", "failed", "tokens in", "tokens out", "mean latency s", "cost USD",
            "manifest"};
  t.left = 1;
  t.paths = {9};
  for (auto& [run, g] : r.generation) {
    std::string cost = kNone;
    if (g.cost_usd) {
      cost = format("%.2f", *g.cost_usd);
      if (g.priced < g.requests) cost += " (" + std::to_string(g.priced) + " priced)";
    }
    t.rows.push_back({run, std::to_string(g.requests), std::to_string(g.ok), std::to_string(g.no_code),
                      std::to_string(g.failed), std::to_string(g.tokens_in), std::to_string(g.tokens_out),
                      g.requests ? format("%.1f", g.latency_s / g.requests) : kNone, cost, g.manifest});
  }
  sec.table = t;
  sec.note =
      "From each run's manifest.jsonl (pkb generate): every request it made, retries and reruns included. Cost: "
      "where models.toml gives the model's prices.";
  return sec;
}

// Every section after the header, warnings and leaderboard, in order.
std::vector<Section> body_sections(const Summary& s, const Results& r, size_t message_chars, size_t most_failures) {
  std::vector<Section> out = {samples_section(s)};
  if (!s.turns.empty()) {
    Section turns{"By turn (pkb agent)", 2, "turns"};
    turns.table = turns_table(s);
    turns.note = kTurnsLegend;
    out.push_back(turns);
  }
  Section cats{"Categories", 2, "categories"};
  out.push_back(cats);
  for (auto& cat : categories_in_order(s)) out.push_back(category_section(s, cat));
  out.push_back(matrix_section(s));
  out.push_back(best_section(s));
  out.push_back(failures_section(s, message_chars, most_failures));
  if (!r.generation.empty()) out.push_back(generation_section(r));
  return out;
}

// The leaderboard as a chart: each run's geo-mean speedup, in rank order.
std::string runs_chart(const Summary& s) {
  std::vector<Bar> bars;
  std::vector<std::string> untimed;
  for (auto& r : s.runs) {
    if (!r.rates.geomean_speedup) {
      untimed.push_back(r.run);
      continue;
    }
    Bar b;
    b.label = std::to_string(r.rank) + ". " + r.run;
    b.value = *r.rates.geomean_speedup;
    b.right = times(b.value) + " over " + std::to_string(r.rates.timed) + " timed, fast_1 " +
              percent(r.rates.fast.empty() ? 0 : r.rates.fast[0], r.rates.evaluations) + ", correct " +
              percent(r.rates.correct, r.rates.evaluations);
    bars.push_back(b);
  }
  std::string out;
  if (!bars.empty())
    out += log_chart(bars, "geo-mean speedup per run, ranked") +
           "<p class=\"legend\">Each run's geo-mean speedup, in rank order, on a log scale from the dashed 1x line "
           "(the reference): blue when faster, amber when slower.</p>\n";
  if (!untimed.empty()) {
    std::string names;
    for (auto& n : untimed) names += (names.empty() ? "" : ", ") + n;
    out += "<p class=\"legend\">No timing that counts for speed (ranked after, by fast_1 and correct): " +
           escape(names) + ".</p>\n";
  }
  return out;
}

// The best counted speedup per problem, the run that made it named beside its bar.
std::string speedup_chart(const Summary& s) {
  std::vector<Bar> bars;
  bool lonely = false;
  for (auto& b : s.best) {
    if (!b.best || !b.best->speedup || *b.best->speedup <= 0) continue;
    const Evaluation& e = *b.best;
    Bar bar;
    std::string where = " W=" + std::to_string(e.world) + (e.size == "default" ? "" : " " + e.size);
    bool alone = e.collective && e.world == 1;
    lonely = lonely || alone;
    bar.label = e.problem + where + (alone ? " (no comm.)" : "");
    bar.label_title = e.problem + where + (alone ? ": a collective at W=1 communicates with no one" : "");
    bar.value = *e.speedup;
    bar.low = e.speedup_low;
    bar.high = e.speedup_high;
    std::string value = times(e.speedup) + (e.speedup_low && e.speedup_high ? " " + spread(e) : "");
    bar.right = value + "  " + e.run + " s" + std::to_string(e.sample);
    bar.right_title = value + ": " + e.run + " sample " + std::to_string(e.sample) + ", " + e.shown_path;
    bars.push_back(bar);
  }
  if (bars.empty()) return "<p>No correct candidate with a timing that counts for speed.</p>\n";
  return log_chart(bars, "speedup of the best correct candidate per problem") +
         "<p class=\"legend\">Log scale: bars grow from the dashed 1x line (the reference), to the right (blue) when faster than the "
         "reference, to the left (amber) when slower; the line under a bar is its quartile range. Beside each bar: "
         "the speedup, its range, and the run and sample that made it." +
         std::string(lonely ? " (no comm.): a collective at W=1, which times a local copy." : "") +
         " CPU-device and shared-GPU timings are not shown.</p>\n";
}

struct VerdictColour {
  const char* verdict;
  const char* colour;
};
const VerdictColour kVerdictColours[] = {
    {"correct", colour::kCorrect},         {"wrong", colour::kWrong}, {"integrity_violation", colour::kIntegrity},
    {"compile_error", colour::kCompileError}, {"crash", colour::kCrash}, {"timeout", colour::kTimeout}};

std::string correctness_chart(const Summary& s) {
  int all = 0, correct = 0;
  for (auto& row : s.categories) all += row.rates.evaluations, correct += row.rates.correct;
  if (all == correct)
    return "<p>Every one of the " + std::to_string(all) + " evaluations is correct, in every category and run.</p>\n";
  int height = static_cast<int>(s.categories.size()) * kRow + 4;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLabelWidth + kBarArea + kRightWidth << "\" height=\""
    << height << "\" role=\"img\" aria-label=\"verdicts per category and run\">\n";
  for (size_t i = 0; i < s.categories.size(); ++i) {
    const CategoryRow& row = s.categories[i];
    int y = static_cast<int>(i) * kRow + 2;
    o << "<text x=\"" << kLabelWidth - 10 << "\" y=\"" << y + 13 << "\" text-anchor=\"end\">"
      << escape(fit(row.category + " / " + row.run, kLabelWidth - 14)) << "</text>\n";
    double x = kLabelWidth;
    std::map<std::string, int> left = row.rates.verdicts;
    std::string tally;
    auto segment = [&](const std::string& title, int count, const char* fill) {
      double w = double(kBarArea) * count / row.rates.evaluations;
      o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << kBar << "\" fill=\"" << fill
        << "\"><title>" << escape(title) << ": " << count << "</title></rect>\n";
      x += w;
      if (title != "correct") tally += ", " + std::to_string(count) + " " + title;
    };
    for (auto& vc : kVerdictColours)
      if (left.count(vc.verdict)) segment(vc.verdict, left[vc.verdict], vc.colour), left.erase(vc.verdict);
    for (auto& [verdict, count] : left) segment(verdict, count, "#d1d5db");  // verdicts of a later schema
    o << "<text x=\"" << kLabelWidth + kBarArea + 12 << "\" y=\"" << y + 13 << "\">"
      << escape(fit(std::to_string(row.rates.correct) + "/" + std::to_string(row.rates.evaluations) + " correct" + tally,
                    kRightWidth - 16))
      << "</text>\n";
  }
  o << "</svg>\n<p class=\"legend\">";
  for (auto& vc : kVerdictColours)
    o << "<span class=\"swatch\" style=\"background:" << vc.colour << "\"></span>" << vc.verdict << " ";
  o << "</p>\n";
  return o.str();
}

}  // namespace

std::string render_text(const Summary& s, const Results& r) {
  std::string out = "pkb report\n" + fields_text(header_section(s, r).fields);
  if (!s.warnings.empty()) out += section_text(warnings_section(s));
  out += section_text(runs_section(s));
  for (auto& sec : body_sections(s, r, 100, 40)) out += section_text(sec);
  return out;
}

std::string render_markdown(const Summary& s, const Results& r) {
  std::string out = "# pkb report\n\n" + fields_markdown(header_section(s, r).fields);
  if (!s.warnings.empty()) out += section_markdown(warnings_section(s));
  out += section_markdown(runs_section(s));
  for (auto& sec : body_sections(s, r, 300, s.failures.size())) out += section_markdown(sec);
  return out;
}

std::string render_html(const Summary& s, const Results& r, const std::string& page_dir) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>pkb report</title>\n<style>\n";
  out += style() + "\n</style>\n</head>\n<body>\n";
  out += section_html(header_section(s, r), page_dir);
  if (!s.warnings.empty()) out += section_html(warnings_section(s), page_dir);
  out += section_html(runs_section(s), page_dir, runs_chart(s));
  out += "<h2>Best correct candidate per problem: speedup over the reference</h2>\n" + speedup_chart(s);
  out += "<h2>Verdicts per category</h2>\n" + correctness_chart(s);
  for (auto& sec : body_sections(s, r, 300, s.failures.size())) out += section_html(sec, page_dir);
  return out + "</body>\n</html>\n";
}

json render_json(const Summary& s, const Results& r) {
  auto opt = [](std::optional<double> v) { return v ? json(*v) : json(); };
  auto rates = [&](const Rates& x) {
    auto frac = [&](int n) { return x.evaluations ? json(double(n) / x.evaluations) : json(); };
    json fast = json::object(), fast_n = json::object();
    for (size_t i = 0; i < kSpeedupThresholds.size(); ++i) {
      fast[threshold(kSpeedupThresholds[i])] = frac(x.fast[i]);
      fast_n[threshold(kSpeedupThresholds[i])] = x.fast[i];
    }
    return json{{"evaluations", x.evaluations},
                {"verdicts", x.verdicts},
                {"compiled", frac(x.compiled)},
                {"correct", frac(x.correct)},
                {"fast", fast},
                {"counts",
                 {{"compiled", x.compiled},
                  {"correct", x.correct},
                  {"fast", fast_n},
                  {"timed", x.timed},
                  {"not_meaningful", x.not_meaningful}}},
                {"geomean_speedup", opt(x.geomean_speedup)},
                {"mean_roofline_fraction", opt(x.mean_roofline_fraction)}};
  };
  auto evaluation = [&](const Evaluation& e) {
    return json{{"run", e.run},
                {"backend", e.backend},
                {"sample", e.sample},
                {"path", e.path},
                {"shown_path", e.shown_path},
                {"verdict", e.verdict},
                {"speedup", opt(e.speedup)},
                {"speedup_low", opt(e.speedup_low)},
                {"speedup_high", opt(e.speedup_high)},
                {"timing_counts", e.timing_counts},
                {"timing_note", e.timing_note},
                {"candidate_us", opt(e.candidate_us)},
                {"reference_us", opt(e.reference_us)},
                {"roofline_fraction", opt(e.roofline_fraction)},
                {"collective", e.collective},
                {"busbw_gbps", opt(e.busbw_gbps)},
                {"tflops", opt(e.tflops)}};
  };
  const Header& h = s.header;
  json j = {{"schema", "pkb.report/1"}, {"files", r.files},           {"evaluations", s.evaluations},
            {"duplicates", r.duplicates}, {"skipped_lines", r.bad_lines}, {"k", s.ks},
            {"speedup_thresholds", kSpeedupThresholds}};
  json settings = json::array();
  for (auto& [setting, n] : h.settings) settings.push_back({{"setting", setting}, {"evaluations", n}});
  json skipped = json::array();
  for (auto& f : r.skipped_files) skipped.push_back({{"file", f.file}, {"why", f.why}});
  j["skipped_files"] = skipped;
  j["rank_order"] = kRankOrder;
  j["header"] = {{"versions", h.versions}, {"devices", h.devices}, {"hardware_profiles", h.profiles},
                 {"worlds", h.worlds},     {"sizes", h.sizes},     {"dtypes", h.dtypes},
                 {"seeds", h.seeds},       {"settings", settings},
                 {"software", {{"pkb", h.pkb_versions}, {"commits", h.commits}, {"without_commit", h.without_commit},
                               {"torch", h.torch}, {"nccl", h.nccl}, {"cuda_runtime", h.cuda_runtime},
                               {"cuda_driver", h.cuda_driver}}},
                 {"software_line", software_line(h)},
                 {"first_time", h.first_time.empty() ? json() : json(h.first_time)},
                 {"last_time", h.last_time.empty() ? json() : json(h.last_time)}};
  j["warnings"] = s.warnings;
  j["runs"] = json::array();
  for (auto& run : s.runs) {
    json x = rates(run.rates);
    x["rank"] = run.rank;
    x["run"] = run.run;
    x["backend"] = run.backend;
    x["problems"] = run.problems;
    x["min_samples"] = run.min_samples;
    json pass = json::object(), fast_at = json::object();
    for (int k : s.ks) {
      pass[std::to_string(k)] = opt(run.pass_at_k.at(k));
      for (size_t i = 0; i < kSpeedupThresholds.size(); ++i)
        fast_at[threshold(kSpeedupThresholds[i])][std::to_string(k)] = opt(run.fast_at_k.at(k)[i]);
    }
    x["pass_at_k"] = pass;
    x["fast_at_k"] = fast_at;
    j["runs"].push_back(x);
  }
  j["turns"] = json::array();
  for (auto& t : s.turns) {
    json pass = json::object(), fast = json::object();
    for (int k : s.ks) pass[std::to_string(k)] = opt(t.pass_at_k.at(k));
    for (size_t i = 0; i < kSpeedupThresholds.size(); ++i) fast[threshold(kSpeedupThresholds[i])] = t.fast[i];
    j["turns"].push_back({{"run", t.run}, {"turn", t.turn}, {"samples", t.samples}, {"pass_at_k", pass}, {"fast", fast}});
  }
  j["categories"] = json::array();
  for (auto& row : s.categories) {
    json x = rates(row.rates);
    x["category"] = row.category;
    x["run"] = row.run;
    j["categories"].push_back(x);
  }
  j["best"] = json::array();
  for (auto& b : s.best) {
    json x = {{"problem", b.problem}, {"problem_id", b.problem_id}, {"category", b.category}, {"world", b.world},
              {"size", b.size},       {"evaluated", b.evaluated},   {"correct", b.correct}};
    x["best"] = b.best ? evaluation(*b.best) : json();
    if (b.best) {
      x["best"]["repeats"] = b.repeats;
      x["best"]["repeat_low"] = opt(b.repeat_low);
      x["best"]["repeat_high"] = opt(b.repeat_high);
    }
    x["correct_uncounted"] = b.correct_uncounted ? evaluation(*b.correct_uncounted) : json();
    j["best"].push_back(x);
  }
  j["matrix"] = json::array();
  for (auto& row : s.matrix) {
    json cells = json::object();
    for (auto& [run, c] : row.cells)
      cells[run] = {{"evaluated", c.evaluated},
                    {"correct", c.correct},
                    {"fastest", c.fastest ? evaluation(*c.fastest) : json()},
                    {"notes", c.notes}};
    j["matrix"].push_back(
        {{"problem", row.problem}, {"problem_id", row.problem_id}, {"world", row.world}, {"size", row.size}, {"runs", cells}});
  }
  j["failures"] = json::array();
  for (auto& e : s.failures) {
    json x = evaluation(e);
    x["problem"] = e.problem;
    x["world"] = e.world;
    x["size"] = e.size;
    x["message"] = e.message;
    j["failures"].push_back(x);
  }
  j["generation"] = json::array();
  for (auto& [run, g] : r.generation)
    j["generation"].push_back({{"run", run},
                               {"manifest", g.manifest},
                               {"requests", g.requests},
                               {"ok", g.ok},
                               {"no_code", g.no_code},
                               {"failed", g.failed},
                               {"tokens_in", g.tokens_in},
                               {"tokens_out", g.tokens_out},
                               {"latency_s", g.latency_s},
                               {"cost_usd", opt(g.cost_usd)},
                               {"priced", g.priced}});
  return j;
}

}  // namespace pkb::report
