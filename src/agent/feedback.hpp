// What a model's answer asks for, and what pkb answers: the values of the [agent] templates
// (agent/book.hpp) from an evaluation's pkb.eval/1 result. Deterministic text: the same
// result gives the same words. Never the seed, never the reference's outputs beyond the
// one value at the first bad index that `pkb eval` itself prints.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/record.hpp"
#include "gen/extract.hpp"
#include "gen/template.hpp"

namespace pkb::agent {

// The tools a model may ask for on a line of its own, outside code blocks.
inline const char* const kShow = "SHOW";
inline const char* const kShapes = "SHAPES";
inline const char* const kDone = "DONE";

struct Request {
  gen::Extraction code;            // found: a candidate to evaluate
  std::vector<std::string> tools;  // kShow, kShapes: in the order asked, each once
  bool done = false;               // a DONE line
};

// `tags`: the backend's fence tags, preferred first (as pkb generate extracts code).
Request read_request(const std::string& answer, const std::vector<std::string>& tags);

// Replaces what a model must not see in free text (pkb's paths, the seed) before it is
// quoted: each `from` by its `to`, longest first.
class Scrubber {
 public:
  void add(const std::string& from, const std::string& to);
  std::string operator()(std::string text) const;

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

// A compiler's output cut to the first `max_errors` errors, each with the lines that
// follow it up to the next diagnostic, at most `max_lines` lines; notes how many errors
// were left out.
std::string first_errors(const std::string& log, int max_errors = 3, size_t max_lines = 30);

// The failure's facts, one per line: rank, output, trial or phase, reason, how many
// elements are wrong, the first bad index, the largest errors.
std::string failure_details(const eval::Failure& failure);

// Timing of a correct result: medians, speedup, bus bandwidth, roofline fraction, flags.
std::string timing_text(const eval::Record& result);

// The lines each rank printed last, from pkb eval's error output, in a code block ("" when
// there are none).
std::string rank_output(const std::string& eval_stderr, size_t max_lines = 40);

// The template for a result's verdict (correct, wrong, compile_error, crash, timeout,
// integrity_violation) and its values: verdict, message, details, compiler_errors,
// rank_output, timing. Free texts go through `scrub`.
std::string verdict_template(const eval::Record& result);
gen::Context result_values(const eval::Record& result, const std::string& eval_stderr, const Scrubber& scrub);

// The text without trailing blanks and newlines (values end where templates say).
std::string chomp(std::string text);

// "1.23x", or "-" for none.
std::string speedup_text(std::optional<double> speedup);

}  // namespace pkb::agent
