#include "gen/extract.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace pkb::gen {

namespace {

struct Fence {
  char ch = 0;
  size_t len = 0;
  std::string info;
};

// A fence line: up to 3 spaces, then 3+ backticks or tildes, then the info string.
bool parse_fence(const std::string& line, Fence& f) {
  size_t i = 0;
  while (i < line.size() && i < 3 && line[i] == ' ') ++i;
  if (i >= line.size() || (line[i] != '`' && line[i] != '~')) return false;
  f.ch = line[i];
  size_t j = i;
  while (j < line.size() && line[j] == f.ch) ++j;
  f.len = j - i;
  if (f.len < 3) return false;
  f.info = line.substr(j);
  f.info.erase(0, f.info.find_first_not_of(" \t"));
  f.info.erase(f.info.find_last_not_of(" \t\r") + 1);
  if (f.ch == '`' && f.info.find('`') != std::string::npos) return false;
  return true;
}

std::string first_word_lower(const std::string& info) {
  std::string w = info.substr(0, info.find_first_of(" \t{"));
  std::transform(w.begin(), w.end(), w.begin(), [](unsigned char c) { return std::tolower(c); });
  return w;
}

}  // namespace

std::vector<CodeBlock> fenced_blocks(const std::string& text) {
  std::vector<CodeBlock> blocks;
  std::istringstream in(text);
  std::string line;
  bool open = false;
  Fence opening;
  CodeBlock cur;
  while (std::getline(in, line)) {
    Fence f;
    if (!open) {
      if (parse_fence(line, f)) {
        open = true;
        opening = f;
        cur = CodeBlock{first_word_lower(f.info), "", false};
      }
    } else if (parse_fence(line, f) && f.ch == opening.ch && f.len >= opening.len && f.info.empty()) {
      cur.complete = true;
      blocks.push_back(cur);
      open = false;
    } else {
      cur.code += line;
      cur.code += '\n';
    }
  }
  if (open) blocks.push_back(cur);
  return blocks;
}

Extraction extract_code(const std::string& text, const std::vector<std::string>& tags) {
  std::vector<CodeBlock> blocks = fenced_blocks(text);
  size_t complete = std::count_if(blocks.begin(), blocks.end(), [](const CodeBlock& b) { return b.complete; });
  Extraction x;
  auto pick = [&](const std::vector<const CodeBlock*>& from, const std::string& how) {
    const CodeBlock* best = *std::max_element(from.begin(), from.end(), [](const CodeBlock* a, const CodeBlock* b) {
      return a->code.size() < b->code.size();
    });
    x.found = true;
    x.code = best->code;
    x.why = how + ", " + std::to_string(complete) + " complete block" + (complete == 1 ? "" : "s");
  };
  for (auto& tag : tags) {
    std::vector<const CodeBlock*> tagged;
    for (auto& b : blocks)
      if (b.complete && b.tag == tag && !b.code.empty()) tagged.push_back(&b);
    if (!tagged.empty()) {
      pick(tagged, "the largest block tagged " + tag);
      return x;
    }
  }
  std::vector<const CodeBlock*> all;
  for (auto& b : blocks)
    if (b.complete && !b.code.empty()) all.push_back(&b);
  if (!all.empty()) {
    pick(all, "the largest block (none tagged " + (tags.empty() ? std::string("for the backend") : tags[0]) + ")");
    return x;
  }
  x.why = blocks.empty() ? "no fenced code block in the answer"
                         : "no complete fenced code block (the answer stops inside one)";
  return x;
}

}  // namespace pkb::gen
