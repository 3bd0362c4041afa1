// The candidate's code in a model's answer: the fenced block tagged with the backend's
// language (the largest such), else the largest complete block of any tag.
#pragma once

#include <string>
#include <vector>

namespace pkb::gen {

struct CodeBlock {
  std::string tag;  // the fence's language tag, lower case ("" when none)
  std::string code;
  bool complete = false;  // has its closing fence (a cut-off answer leaves the last one open)
};

// Every ``` or ~~~ fenced block, in order (CommonMark fences: up to 3 spaces of indent, a
// closing fence of the same character at least as long).
std::vector<CodeBlock> fenced_blocks(const std::string& text);

struct Extraction {
  bool found = false;
  std::string code;
  std::string why;  // when found: which block ("tagged cuda, 1 of 3 blocks"); else why none
};

// `tags`: the backend's language tags, most preferred first ("cuda", "cu", ...).
Extraction extract_code(const std::string& text, const std::vector<std::string>& tags);

}  // namespace pkb::gen
