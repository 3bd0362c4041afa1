#include "gen/template.hpp"

#include <cctype>
#include <functional>

#include "gen/error.hpp"

namespace pkb::gen {

namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Calls `on_text` for literal runs and `on_name` for placeholders, in order.
void scan(const std::string& s, const std::function<void(size_t, size_t)>& on_text,
          const std::function<void(const std::string&)>& on_name) {
  size_t text_from = 0, i = 0;
  while (i < s.size()) {
    size_t end = i + 1;
    if (s[i] == '{' && end < s.size() && name_start(s[end])) {
      while (end < s.size() && name_char(s[end])) ++end;
      if (end < s.size() && s[end] == '}') {
        on_text(text_from, i);
        on_name(s.substr(i + 1, end - i - 1));
        i = text_from = end + 1;
        continue;
      }
    }
    ++i;
  }
  on_text(text_from, s.size());
}

std::string unknown(const std::string& where, const std::string& name, const std::set<std::string>& known) {
  std::string list;
  for (auto& k : known) list += (list.empty() ? "" : ", ") + k;
  return where + " uses unknown placeholder {" + name + "}; use one of: " + list;
}

}  // namespace

std::set<std::string> placeholders(const std::string& text) {
  std::set<std::string> names;
  scan(
      text, [](size_t, size_t) {}, [&](const std::string& n) { names.insert(n); });
  return names;
}

void check_placeholders(const std::string& text, const std::set<std::string>& known, const std::string& where) {
  for (auto& n : placeholders(text))
    if (!known.count(n)) throw GenError(unknown(where, n, known));
}

std::string render(const std::string& text, const Context& ctx, const std::string& where) {
  std::string out;
  scan(
      text, [&](size_t a, size_t b) { out.append(text, a, b - a); },
      [&](const std::string& n) {
        auto it = ctx.find(n);
        if (it == ctx.end()) {
          std::set<std::string> known;
          for (auto& kv : ctx) known.insert(kv.first);
          throw GenError(unknown(where, n, known));
        }
        out += it->second;
      });
  return out;
}

}  // namespace pkb::gen
