#include "agent/feedback.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "io/text.hpp"

namespace pkb::agent {

using json = nlohmann::json;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string join(const std::vector<std::string>& lines, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

using io::format;

double number(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

std::string text(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// A tool line: the word alone on its line, maybe in backticks or bold, maybe with a full stop.
std::string tool_of(std::string line) {
  auto strip = [&](const std::string& chars) {
    size_t a = line.find_first_not_of(chars);
    line = a == std::string::npos ? "" : line.substr(a, line.find_last_not_of(chars) + 1 - a);
  };
  strip(" \t\r`*_.:");
  std::transform(line.begin(), line.end(), line.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const char* tool : {kShow, kShapes, kDone})
    if (line == tool) return tool;
  return "";
}

bool fence_line(const std::string& line) {
  size_t i = line.find_first_not_of(' ');
  return i != std::string::npos && i <= 3 && (line.compare(i, 3, "```") == 0 || line.compare(i, 3, "~~~") == 0);
}

// A compiler's new diagnostic starts at the left margin; its context lines are indented.
bool starts_diagnostic(const std::string& line) {
  return !line.empty() && line[0] != ' ' && line[0] != '\t';
}

bool is_error(const std::string& line) {
  return starts_diagnostic(line) &&
         (line.find("error:") != std::string::npos || line.find("error :") != std::string::npos ||
          line.find("undefined reference") != std::string::npos);
}

bool is_header(const std::string& line) {  // what gcc says before an error: where it happened
  return starts_diagnostic(line) && !is_error(line) &&
         (line.find(": In ") != std::string::npos || line.rfind("In file included from", 0) == 0 ||
          line.find("required from") != std::string::npos);
}

}  // namespace

Request read_request(const std::string& answer, const std::vector<std::string>& tags) {
  Request r;
  r.code = gen::extract_code(answer, tags);
  bool in_fence = false;
  for (auto& line : lines_of(answer)) {
    if (fence_line(line)) {
      in_fence = !in_fence;
      continue;
    }
    if (in_fence) continue;
    std::string tool = tool_of(line);
    if (tool == kDone)
      r.done = true;
    else if (!tool.empty() && std::find(r.tools.begin(), r.tools.end(), tool) == r.tools.end())
      r.tools.push_back(tool);
  }
  return r;
}

void Scrubber::add(const std::string& from, const std::string& to) {
  if (from.empty()) return;
  pairs_.emplace_back(from, to);
  std::stable_sort(pairs_.begin(), pairs_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

std::string Scrubber::operator()(std::string t) const {
  for (auto& [from, to] : pairs_)
    for (size_t at = t.find(from); at != std::string::npos; at = t.find(from, at + to.size()))
      t.replace(at, from.size(), to);
  return t;
}

std::string first_errors(const std::string& log, int max_errors, size_t max_lines) {
  std::vector<std::string> lines;
  bool cut = false;
  for (auto& l : lines_of(log)) {
    if (l.rfind("... (more in the build log)", 0) == 0) {
      cut = true;
      continue;
    }
    lines.push_back(l);
  }
  std::vector<size_t> errors;
  for (size_t i = 0; i < lines.size(); ++i)
    if (is_error(lines[i])) errors.push_back(i);
  if (errors.empty()) {
    std::string out = join(lines, 0, max_lines);
    return lines.size() > max_lines || cut ? out + "... (more follows)\n" : out;
  }
  size_t from = errors[0];
  while (from > 0 && errors[0] - from < 3 && is_header(lines[from - 1])) --from;
  size_t to = errors.size() > static_cast<size_t>(max_errors) ? errors[max_errors] : lines.size();
  bool more = to < lines.size() || cut;
  if (to - from > max_lines) {
    to = from + max_lines;
    more = true;
  }
  std::string out = join(lines, from, to);
  if (more) out += "... (more errors follow; fix these first)\n";
  return out;
}

std::string failure_details(const eval::Failure& f) {
  std::string out;
  auto line = [&](const std::string& label, const std::string& value) {
    if (!value.empty()) out += "- " + label + ": " + value + "\n";
  };
  if (f.rank >= 0) line("rank", std::to_string(f.rank));
  line(f.reason == "input_mutated" ? "input" : "output", f.output);
  if (f.phase == "trial" && f.trial >= 0)
    line("trial", std::to_string(f.trial));
  else
    line("phase", f.phase);
  line("reason", f.reason);
  const json& m = f.mismatch;  // the measured facts of a values failure (eval/compare.hpp)
  if (number(m, "bad_count") > 0) line("elements wrong", std::to_string(static_cast<int64_t>(number(m, "bad_count"))));
  if (m.is_object() && m.contains("first_bad_index") && m["first_bad_index"].is_array() && !m["first_bad_index"].empty()) {
    std::string idx;
    for (auto& i : m["first_bad_index"]) idx += (idx.empty() ? "" : ", ") + std::to_string(i.get<int64_t>());
    line("first bad index", "[" + idx + "]");
  }
  if (number(m, "max_abs_err") > 0)
    line("largest error", format("%g", number(m, "max_abs_err")) + " absolute, " + format("%g", number(m, "max_rel_err")) +
                              " relative");
  return out;
}

std::string timing_text(const eval::Record& r) {
  if (!r.timing) return "Timing was off for this run.";
  const eval::Stats &c = r.timing->candidate, &ref = r.timing->reference;
  std::string out = "- median time per call (" + std::to_string(c.samples) + " timed calls, slowest rank): yours " +
                    format("%.1f us", c.median) + ", the reference's " + format("%.1f us", ref.median) + "\n";
  out += "- speedup: " + speedup_text(r.speedup) + "\n";
  if (r.busbw_gbps)
    out += "- bus bandwidth: yours " + format("%.1f GB/s", r.busbw_gbps->candidate_gbps) + ", the reference's " +
           format("%.1f GB/s", r.busbw_gbps->reference_gbps) + "\n";
  if (r.roofline)
    out += "- roofline: " + format("%.0f%%", 100 * r.roofline->fraction) + " of the " + r.run.hardware_profile +
           " bound (" + format("%.1f us", r.roofline->bound_us) + ", limited by " + r.roofline->limiter + ")\n";
  if (!r.flags.empty()) {
    std::string f;
    for (auto& x : r.flags) f += (f.empty() ? "" : ", ") + x;
    out += "- flags: " + f + "\n";
  }
  if (r.run.device == "cpu")
    out += "- note: this runs on pkb's CPU device, whose timings say little about a GPU's\n";
  else if (eval::timing_in_doubt(r.flags))
    out += "- note: the flags put this timing in doubt; it does not count as a speedup\n";
  return out;
}

std::string rank_output(const std::string& eval_stderr, size_t max_lines) {
  std::vector<std::string> keep;
  for (auto& l : lines_of(eval_stderr))
    if (l.rfind("  rank ", 0) == 0 || l.rfind("    | ", 0) == 0) keep.push_back(l);
  if (keep.empty()) return "";
  std::string out = "```\n" + join(keep, 0, max_lines);
  if (keep.size() > max_lines) out += "... (" + std::to_string(keep.size() - max_lines) + " more lines)\n";
  return out + "```\n";
}

std::string verdict_template(const eval::Record& r) {
  return r.verdict ? eval::verdict_name(*r.verdict) : "crash";  // no verdict: a failure to report as it is
}

std::string chomp(std::string text) {
  text.erase(text.find_last_not_of(" \t\r\n") + 1);
  return text;
}

gen::Context result_values(const eval::Record& r, const std::string& eval_stderr, const Scrubber& scrub) {
  gen::Context v;
  const std::string verdict = r.verdict ? eval::verdict_name(*r.verdict) : "";
  v["verdict"] = verdict;
  std::string message = chomp(scrub(r.message));
  while (!message.empty() && message.back() == '.') message.pop_back();  // the templates end the sentence
  v["message"] = message;
  const bool compile = r.verdict == eval::Verdict::compile_error;
  v["details"] = compile || !r.failure ? "" : chomp(scrub(failure_details(*r.failure)));
  v["compiler_errors"] = compile && r.failure ? chomp(scrub(first_errors(r.failure->detail))) : "";
  v["rank_output"] = r.verdict == eval::Verdict::crash || r.verdict == eval::Verdict::timeout
                         ? chomp(scrub(rank_output(eval_stderr)))
                         : "";
  v["timing"] = r.correct() ? chomp(scrub(timing_text(r))) : "";
  return v;
}

std::string speedup_text(std::optional<double> s) { return s ? format("%.2fx", *s) : "-"; }

}  // namespace pkb::agent
