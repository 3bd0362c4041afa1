// The pieces every report page is made of (the leaderboard, render.cpp; the comparison of
// two runs, compare_render.cpp): sections of fields, items, a table and notes, each
// rendered for the terminal, as Markdown and as self-contained HTML, and the log-scale
// speedup chart of the HTML pages.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "io/text.hpp"

namespace pkb::report {

// The colours of the HTML pages; the screenshot tests look for them.
namespace colour {
inline const char* const kFaster = "#2563eb";   // speedup bar, at least as fast as the reference
inline const char* const kSlower = "#f59e0b";   // speedup bar, slower
inline const char* const kSpread = "#0f766e";   // the speedup's quartile range, under its bar
inline const char* const kHeader = "#eef2ff";   // the header's background
inline const char* const kCorrect = "#16a34a";
inline const char* const kWrong = "#dc2626";
inline const char* const kIntegrity = "#7c3aed";
inline const char* const kCompileError = "#9ca3af";
inline const char* const kCrash = "#92400e";
inline const char* const kTimeout = "#db2777";
}  // namespace colour

namespace doc {

// A table. The first `left` columns are text; the rest are numbers. `links` maps a cell
// (row, column) to the absolute path it refers to (HTML links to it). In HTML, `paths`
// columns show long paths by their last folders (the whole path on hover), `wrap` columns
// (and their heads) may break lines, and `messages` columns wrap long text in a column of
// their own width, so that tables fit a laptop's screen.
struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  size_t left = 1;
  std::map<std::pair<size_t, size_t>, std::string> links;
  std::set<size_t> paths, wrap, messages;
};

// A header field's value: one or more lines.
using Lines = std::vector<std::string>;

struct Section {
  std::string title;
  int level = 2;                               // 2: a section, 3: a subsection
  std::string css;                             // the HTML class of the section
  std::vector<std::pair<std::string, Lines>> fields;  // name: value lines
  std::vector<std::string> items;              // a bulleted list
  std::string intro;                           // a paragraph before the table
  std::optional<Table> table;
  std::string note;  // a paragraph after the table
};

inline const char* const kNone = "-";

using io::format;

std::string percent(std::optional<double> fraction);
std::string percent(int part, int whole);
std::string times(std::optional<double> x);  // "2.50x"
std::string threshold(double p);             // "1.5"
std::string us(std::optional<double> v);
// Throughput with three significant figures or so: 370, 47.0, 3.12.
std::string rate(std::optional<double> v);
std::string joined(const std::set<std::string>& values);  // "a, b"; kNone when empty
std::string shortened(std::string text, size_t most);     // one line, at most `most` characters
// A long path by its file name alone (".../sample_0.cu"): tables stay narrow, and the whole
// path is on hover and behind the link.
std::string short_path(const std::string& path, size_t most = 24);
std::string escape(const std::string& s);  // for HTML text and attributes
std::string now_utc();                     // "2026-12-03 02:17 UTC"

std::string as_text(const Table& t);
std::string as_markdown(const Table& t);
// `page_dir`: the folder the page is written to, so that links resolve from it.
std::string as_html(const Table& t, const std::string& page_dir);
std::string fields_text(const std::vector<std::pair<std::string, Lines>>& fields);
std::string fields_markdown(const std::vector<std::pair<std::string, Lines>>& fields);
std::string section_text(const Section& s);
std::string section_markdown(const Section& s);
// `extra`: HTML placed after the intro, before the table (a chart).
std::string section_html(const Section& s, const std::string& page_dir, const std::string& extra = "");

// --- HTML charts
//
// Speedups are drawn on a log scale from the 1x line: faster bars to the right, slower ones
// to the left, so 0.5x is as long as 2x. Labels sit in fixed columns (the row's name on the
// left, the value and the run on the right), so they never overlap a bar or each other.

constexpr int kLabelWidth = 300, kBarArea = 520, kRightWidth = 380, kRow = 26, kBar = 16, kWhisker = 4,
              kAxis = 30;
constexpr double kCharPx = 7.2;  // a 12 px DejaVu Sans character, roughly: what fits a column

// `text` cut to what fits `px` pixels.
std::string fit(const std::string& text, int px);

struct Bar {
  std::string label, label_title;  // the left column (its whole text on hover)
  double value = 1;                // a speedup, > 0
  std::optional<double> low, high;  // its range (quartiles, an interval), drawn under it
  std::string right, right_title;   // the right column
};

std::string log_chart(const std::vector<Bar>& bars, const std::string& aria);

// The pages' style sheet (inline: a page fetches nothing).
std::string style();

}  // namespace doc
}  // namespace pkb::report
