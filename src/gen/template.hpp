// Prompt templates: `{name}` (a name of letters, digits and underscores) is replaced by its
// value; every other brace is plain text, so code in a template needs no escaping. Values
// are inserted as they are, never scanned for placeholders themselves.
#pragma once

#include <map>
#include <set>
#include <string>

namespace pkb::gen {

using Context = std::map<std::string, std::string>;

std::set<std::string> placeholders(const std::string& text);

// Throws GenError naming `where` and the first unknown placeholder.
std::string render(const std::string& text, const Context& ctx, const std::string& where);

// Throws the same error when `text` uses a name outside `known`.
void check_placeholders(const std::string& text, const std::set<std::string>& known, const std::string& where);

}  // namespace pkb::gen
