#include "agent/book.hpp"

#include "gen/error.hpp"

namespace pkb::agent {

namespace {

// Required templates, and what each is for (named in the error when one is missing).
const std::map<std::string, const char*> kTemplates = {
    {"intro", "after the prompt on the first turn"},
    {"feedback", "every later turn's message"},
    {"correct", "{result} of a correct candidate"},
    {"wrong", "{result} of a wrong one"},
    {"compile_error", "{result} of one that does not build"},
    {"crash", "{result} of one that crashes a rank"},
    {"timeout", "{result} of one that overruns a deadline"},
    {"integrity_violation", "{result} of one that breaks the rules"},
    {"no_code", "{result} of an answer without code or a tool"},
    {"show", "the answer to SHOW"},
    {"shapes", "the answer to SHAPES"},
    {"best", "{best} once a candidate is correct"},
    {"no_best", "{best} before"},
};

// Lines right-trimmed, runs of blank lines cut to one, none at either end: templates
// whose values are empty leave no holes.
std::string squeeze(const std::string& text) {
  std::string out;
  bool blank_pending = false;
  size_t at = 0;
  while (at <= text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(at, nl - at);
    line.erase(line.find_last_not_of(" \t\r") + 1);
    at = nl + 1;
    if (line.empty()) {
      blank_pending = !out.empty();
      continue;
    }
    if (!out.empty()) out += blank_pending ? "\n\n" : "\n";
    blank_pending = false;
    out += line;
  }
  return out;
}

}  // namespace

const std::set<std::string>& template_values() {
  static const std::set<std::string> names = {
      "turn",          "turns",       "turns_left", "problem",     "backend_name", "language",   "output_file",
      "world",         "device",      "size",       "outcome",     "result",       "tools",      "best",
      "verdict",       "message",     "details",    "compiler_errors", "rank_output", "timing", "why",
      "show",          "shapes",      "best_turn",  "best_speedup"};
  return names;
}

Book Book::from(const gen::PromptBook& prompts) {
  Book b;
  b.path = prompts.path;
  for (auto& [name, what] : kTemplates) {
    auto it = prompts.agent.find(name);
    if (it == prompts.agent.end())
      throw gen::GenError(prompts.path + ": [agent] needs " + name + " = \"\"\"...\"\"\" (" + what + ")");
    gen::check_placeholders(it->second, template_values(), prompts.path + " [agent] " + name);
    b.templates[name] = it->second;
  }
  for (auto& [name, text] : prompts.agent)
    if (!kTemplates.count(name)) {
      std::string known;
      for (auto& [k, w] : kTemplates) known += (known.empty() ? "" : ", ") + k;
      throw gen::GenError(prompts.path + ": [agent] has no template '" + name + "'; use " + known);
    }
  return b;
}

std::string Book::render(const std::string& name, const gen::Context& values) const {
  return squeeze(gen::render(templates.at(name), values, path + " [agent] " + name));
}

}  // namespace pkb::agent
