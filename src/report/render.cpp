#include "report/render.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "spec/spec.hpp"

namespace pkb::report {

using json = nlohmann::json;

namespace {

// A table, rendered three ways. The first `left` columns are text; the rest are numbers.
struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  size_t left = 1;
};

const char* const kNone = "-";

std::string fmt(const char* f, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string percent(std::optional<double> fraction) { return fraction ? fmt("%.1f%%", 100 * *fraction) : kNone; }
std::string percent(int part, int whole) { return whole ? percent(double(part) / whole) : kNone; }
std::string times(std::optional<double> x) { return x ? fmt("%.2fx", *x) : kNone; }
std::string threshold(double p) { return fmt("%g", p); }

std::string as_text(const Table& t) {
  std::vector<size_t> w(t.head.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = t.head[i].size();
  for (auto& row : t.rows)
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::max(w[i], row[i].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t i = 0; i < w.size(); ++i) {
      std::string pad(w[i] - cells[i].size(), ' ');
      l += (i ? "  " : "") + (i < t.left ? cells[i] + pad : pad + cells[i]);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(t.head);
  for (auto& row : t.rows) line(row);
  return out;
}

std::string as_markdown(const Table& t) {
  std::string out = "|";
  for (auto& h : t.head) out += " " + h + " |";
  out += "\n|";
  for (size_t i = 0; i < t.head.size(); ++i) out += i < t.left ? " --- |" : " ---: |";
  out += "\n";
  for (auto& row : t.rows) {
    out += "|";
    for (auto& c : row) {
      std::string cell = c;
      for (size_t at = 0; (at = cell.find('|', at)) != std::string::npos; at += 2) cell.replace(at, 1, "\\|");
      out += " " + cell + " |";
    }
    out += "\n";
  }
  return out;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string as_html(const Table& t) {
  std::string out = "<div class=\"scroll\"><table>\n<tr>";
  for (size_t i = 0; i < t.head.size(); ++i) out += (i < t.left ? "<th>" : "<th class=\"n\">") + escape(t.head[i]) + "</th>";
  out += "</tr>\n";
  for (auto& row : t.rows) {
    out += "<tr>";
    for (size_t i = 0; i < row.size(); ++i) out += (i < t.left ? "<td>" : "<td class=\"n\">") + escape(row[i]) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table></div>\n";
}

std::vector<std::string> rate_cells(const Rates& r) {
  std::vector<std::string> cells = {std::to_string(r.evaluations), percent(r.compiled, r.evaluations),
                                    percent(r.correct, r.evaluations)};
  for (int f : r.fast) cells.push_back(percent(f, r.evaluations));
  cells.push_back(times(r.geomean_speedup));
  cells.push_back(percent(r.mean_roofline_fraction));
  return cells;
}

std::vector<std::string> rate_head() {
  std::vector<std::string> h = {"evaluations", "compiled", "correct"};
  for (double p : kSpeedupThresholds) h.push_back("fast_" + threshold(p));
  h.push_back("geo-mean speedup");
  h.push_back("roofline");
  return h;
}

Table runs_table(const Summary& s) {
  Table t;
  t.head = {"run", "backend", "problems"};
  t.left = 2;
  for (auto& h : rate_head()) t.head.push_back(h);
  for (auto& r : s.runs) {
    std::vector<std::string> row = {r.run, r.backend.empty() ? std::string(kNone) : r.backend, std::to_string(r.problems)};
    for (auto& c : rate_cells(r.rates)) row.push_back(c);
    t.rows.push_back(row);
  }
  return t;
}

Table samples_table(const Summary& s) {
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
  return t;
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

Table category_table(const Summary& s, const std::string& category) {
  Table t;
  t.head = {"run"};
  for (auto& h : rate_head()) t.head.push_back(h);
  for (auto& row : s.categories) {
    if (row.category != category) continue;
    std::vector<std::string> cells = {row.run};
    for (auto& c : rate_cells(row.rates)) cells.push_back(c);
    t.rows.push_back(cells);
  }
  return t;
}

Table best_table(const Summary& s) {
  Table t;
  t.head = {"problem", "best run", "backend", "sample", "candidate", "W", "size", "correct", "speedup", "candidate us",
            "reference us", "roofline"};
  t.left = 5;
  for (auto& b : s.best) {
    std::vector<std::string> row = {b.problem, kNone, kNone, kNone, kNone};
    if (b.best)
      row = {b.problem, b.best->run, b.best->backend.empty() ? std::string(kNone) : b.best->backend,
             std::to_string(b.best->sample), b.best->path};
    auto us = [](std::optional<double> v) { return v ? fmt("%.1f", *v) : std::string(kNone); };
    const Evaluation* e = b.best ? &*b.best : nullptr;
    for (auto& c : std::vector<std::string>{
             std::to_string(b.world), b.size, std::to_string(b.correct) + "/" + std::to_string(b.evaluated),
             times(e ? e->speedup : std::nullopt), us(e ? e->candidate_us : std::nullopt),
             us(e ? e->reference_us : std::nullopt), percent(e ? e->roofline_fraction : std::nullopt)})
      row.push_back(c);
    t.rows.push_back(row);
  }
  return t;
}

std::string notes(const Summary& s, const Results& r) {
  std::string n = std::to_string(s.evaluations) + " evaluation" + (s.evaluations == 1 ? "" : "s") + " from " +
                  std::to_string(r.files.size()) + " file" + (r.files.size() == 1 ? "" : "s");
  if (r.duplicates) n += "; " + std::to_string(r.duplicates) + " repeated evaluation(s) counted once (the later line)";
  if (r.bad_lines) n += "; " + std::to_string(r.bad_lines) + " line(s) skipped (not pkb.eval/1)";
  return n + ".";
}

const char* const kLegend =
    "fast_p: correct and more than p times faster than the reference. pass@k and fast_p@k: unbiased estimators "
    "over each run's samples of a problem (n samples, c of them good: 1 - C(n-c,k)/C(n,k)), averaged over "
    "problems; shown where every problem has at least k samples. Geo-mean speedup and roofline (speed-of-light "
    "time / candidate time, mean): over correct candidates.";

// --- HTML charts ----------------------------------------------------------------------

constexpr int kLabelWidth = 280, kBarArea = 600, kRow = 26, kBar = 18;

std::string speedup_chart(const Summary& s) {
  std::vector<const BestCandidate*> rows;
  double top = 1.0;
  for (auto& b : s.best)
    if (b.best && b.best->speedup && *b.best->speedup > 0) {
      rows.push_back(&b);
      top = std::max(top, *b.best->speedup);
    }
  if (rows.empty()) return "<p>No correct candidate with a timing yet.</p>\n";
  int height = static_cast<int>(rows.size()) * kRow + 24;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLabelWidth + kBarArea + 80 << "\" height=\"" << height
    << "\" role=\"img\" aria-label=\"speedup of the best correct candidate per problem\">\n";
  // The 1x line goes under the bars, so a bar stays one block of colour.
  double one = kLabelWidth + kBarArea / top;
  o << "<line x1=\"" << one << "\" y1=\"0\" x2=\"" << one << "\" y2=\"" << height - 18
    << "\" stroke=\"#6b7280\" stroke-dasharray=\"4 3\"/>\n"
    << "<text x=\"" << one << "\" y=\"" << height - 4 << "\" text-anchor=\"middle\" class=\"axis\">1x (reference)</text>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const BestCandidate& b = *rows[i];
    double x = *b.best->speedup, len = kBarArea * x / top;
    int y = static_cast<int>(i) * kRow;
    o << "<text x=\"" << kLabelWidth - 8 << "\" y=\"" << y + 14 << "\" text-anchor=\"end\">" << escape(b.problem)
      << " W=" << b.world << "</text>\n"
      << "<rect x=\"" << kLabelWidth << "\" y=\"" << y << "\" width=\"" << len << "\" height=\"" << kBar
      << "\" fill=\"" << (x >= 1 ? colour::kFaster : colour::kSlower) << "\"><title>" << escape(b.best->run)
      << " sample " << b.best->sample << "</title></rect>\n"
      << "<text x=\"" << kLabelWidth + len + 6 << "\" y=\"" << y + 14 << "\">" << fmt("%.2fx", x) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

struct VerdictColour {
  const char* verdict;
  const char* colour;
};
const VerdictColour kVerdictColours[] = {
    {"correct", colour::kCorrect},         {"wrong", colour::kWrong}, {"integrity_violation", colour::kIntegrity},
    {"compile_error", colour::kCompileError}, {"crash", colour::kCrash}, {"timeout", colour::kTimeout}};

std::string correctness_chart(const Summary& s) {
  int height = static_cast<int>(s.categories.size()) * kRow + 4;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLabelWidth + kBarArea + 120 << "\" height=\"" << height
    << "\" role=\"img\" aria-label=\"verdicts per category and run\">\n";
  for (size_t i = 0; i < s.categories.size(); ++i) {
    const CategoryRow& row = s.categories[i];
    int y = static_cast<int>(i) * kRow;
    o << "<text x=\"" << kLabelWidth - 8 << "\" y=\"" << y + 14 << "\" text-anchor=\"end\">" << escape(row.category)
      << " / " << escape(row.run) << "</text>\n";
    double x = kLabelWidth;
    std::map<std::string, int> left = row.rates.verdicts;
    auto segment = [&](const std::string& title, int count, const char* fill) {
      double w = double(kBarArea) * count / row.rates.evaluations;
      o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << kBar << "\" fill=\"" << fill
        << "\"><title>" << escape(title) << ": " << count << "</title></rect>\n";
      x += w;
    };
    for (auto& vc : kVerdictColours)
      if (left.count(vc.verdict)) segment(vc.verdict, left[vc.verdict], vc.colour), left.erase(vc.verdict);
    for (auto& [verdict, count] : left) segment(verdict, count, "#d1d5db");  // verdicts of a later schema
    o << "<text x=\"" << kLabelWidth + kBarArea + 6 << "\" y=\"" << y + 14 << "\">" << row.rates.correct << "/"
      << row.rates.evaluations << " correct</text>\n";
  }
  o << "</svg>\n<p class=\"legend\">";
  for (auto& vc : kVerdictColours)
    o << "<span class=\"swatch\" style=\"background:" << vc.colour << "\"></span>" << vc.verdict << " ";
  o << "</p>\n";
  return o.str();
}

const char* const kStyle = R"(body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:24px;color:#1f2937;font-size:14px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}h3{font-size:15px;margin:18px 0 6px}
.meta,.legend{color:#4b5563}svg{display:block}svg text{font-size:12px;fill:#374151}svg .axis{fill:#6b7280}
svg rect{shape-rendering:crispEdges}
.scroll{overflow-x:auto}table{border-collapse:collapse;margin:4px 0}th,td{padding:3px 8px;border-bottom:1px solid #e5e7eb;text-align:left}
th{background:#f3f4f6}.n{text-align:right;font-variant-numeric:tabular-nums}
.swatch{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px})";

}  // namespace

std::string render_text(const Summary& s, const Results& r) {
  std::string out = notes(s, r) + "\n\nruns\n" + as_text(runs_table(s)) + "\nover samples\n" + as_text(samples_table(s));
  if (!s.turns.empty()) out += "\nby turn (pkb agent)\n" + as_text(turns_table(s));
  for (auto& cat : categories_in_order(s)) out += "\n" + category_title(cat) + "\n" + as_text(category_table(s, cat));
  out += "\nbest candidate per problem\n" + as_text(best_table(s));
  return out;
}

std::string render_markdown(const Summary& s, const Results& r) {
  std::string out = "# pkb report\n\n" + notes(s, r) + "\n\n## Runs\n\n" + as_markdown(runs_table(s)) +
                    "\n## Over samples\n\n" + as_markdown(samples_table(s)) + "\n" + kLegend + "\n\n";
  if (!s.turns.empty()) out += "## By turn (pkb agent)\n\n" + as_markdown(turns_table(s)) + "\n" + kTurnsLegend + "\n\n";
  out += "## Categories\n";
  for (auto& cat : categories_in_order(s))
    out += "\n### " + category_title(cat) + "\n\n" + as_markdown(category_table(s, cat));
  out += "\n## Best candidate per problem\n\n" + as_markdown(best_table(s));
  return out;
}

std::string render_html(const Summary& s, const Results& r) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>pkb report</title>\n<style>\n";
  out += std::string(kStyle) + "\n</style>\n</head>\n<body>\n<h1>pkb report</h1>\n<p class=\"meta\">" +
         escape(notes(s, r)) + "</p>\n";
  out += "<h2>Best correct candidate per problem: speedup over the reference</h2>\n" + speedup_chart(s);
  out += "<h2>Verdicts per category</h2>\n" + correctness_chart(s);
  out += "<h2>Runs</h2>\n" + as_html(runs_table(s)) + "<h2>Over samples</h2>\n" + as_html(samples_table(s)) +
         "<p class=\"legend\">" + escape(kLegend) + "</p>\n";
  if (!s.turns.empty())
    out += "<h2>By turn (pkb agent)</h2>\n" + as_html(turns_table(s)) + "<p class=\"legend\">" + escape(kTurnsLegend) +
           "</p>\n";
  out += "<h2>Categories</h2>\n";
  for (auto& cat : categories_in_order(s))
    out += "<h3>" + escape(category_title(cat)) + "</h3>\n" + as_html(category_table(s, cat));
  out += "<h2>Best candidate per problem</h2>\n" + as_html(best_table(s)) + "</body>\n</html>\n";
  return out;
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
                {"counts", {{"compiled", x.compiled}, {"correct", x.correct}, {"fast", fast_n}, {"timed", x.timed}}},
                {"geomean_speedup", opt(x.geomean_speedup)},
                {"mean_roofline_fraction", opt(x.mean_roofline_fraction)}};
  };
  json j = {{"schema", "pkb.report/1"}, {"files", r.files},           {"evaluations", s.evaluations},
            {"duplicates", r.duplicates}, {"skipped_lines", r.bad_lines}, {"k", s.ks},
            {"speedup_thresholds", kSpeedupThresholds}};
  j["runs"] = json::array();
  for (auto& run : s.runs) {
    json x = rates(run.rates);
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
    if (b.best)
      x["best"] = {{"run", b.best->run},
                   {"backend", b.best->backend},
                   {"sample", b.best->sample},
                   {"path", b.best->path},
                   {"speedup", opt(b.best->speedup)},
                   {"candidate_us", opt(b.best->candidate_us)},
                   {"reference_us", opt(b.best->reference_us)},
                   {"roofline_fraction", opt(b.best->roofline_fraction)}};
    else
      x["best"] = nullptr;
    j["best"].push_back(x);
  }
  return j;
}

}  // namespace pkb::report
