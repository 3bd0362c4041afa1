// A summary as text for the terminal, Markdown, a self-contained HTML page (inline CSS and
// SVG charts; no script, no network) and JSON (schema pkb.report/1). Every format is the
// same list of sections (render.cpp: one function per section), in this order: the header
// (what the results were run with), warnings (what they mix, what does not count), runs,
// samples, categories, problems x runs, the best candidate per problem, failures, and
// generation totals.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "report/document.hpp"
#include "report/leaderboard.hpp"
#include "report/results.hpp"

namespace pkb::report {

std::string render_text(const Summary& s, const Results& r);
std::string render_markdown(const Summary& s, const Results& r);
// `page_dir`: the folder the page is written to, so that links to candidates resolve from
// it ("" : links as the paths are shown, relative to the results file's folder).
std::string render_html(const Summary& s, const Results& r, const std::string& page_dir = "");
nlohmann::json render_json(const Summary& s, const Results& r);

}  // namespace pkb::report
