// A summary as text for the terminal, Markdown, a self-contained HTML page (inline CSS and
// SVG charts; no script, no network) and JSON (schema pkb.report/1). Every format is the
// same list of sections (render.cpp: one function per section), in this order: the header
// (what the results were run with), warnings (what they mix, what does not count), runs,
// samples, categories, problems x runs, the best candidate per problem, failures, and
// generation totals.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "report/results.hpp"
#include "report/leaderboard.hpp"

namespace pkb::report {

// The colours of the HTML page; the screenshot test looks for them.
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

std::string render_text(const Summary& s, const Results& r);
std::string render_markdown(const Summary& s, const Results& r);
// `page_dir`: the folder the page is written to, so that links to candidates resolve from
// it ("" : links as the paths are shown, relative to the results file's folder).
std::string render_html(const Summary& s, const Results& r, const std::string& page_dir = "");
nlohmann::json render_json(const Summary& s, const Results& r);

}  // namespace pkb::report
