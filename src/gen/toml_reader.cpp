#include "gen/toml_reader.hpp"

#include "gen/error.hpp"

namespace pkb::gen {

TomlReader::TomlReader(std::string path) : path_(std::move(path)) {
  try {
    doc_ = toml::parse_file(path_);
  } catch (const toml::parse_error& e) {
    throw GenError(path_ + ":" + std::to_string(e.source().begin.line) +
                   ": malformed TOML: " + std::string(e.description()));
  }
}

void TomlReader::fail(const toml::node& at, const std::string& what) const {
  std::string where = path_;
  if (at.source().begin.line) where += ":" + std::to_string(at.source().begin.line);
  throw GenError(where + ": " + what);
}

void TomlReader::only_keys(const toml::table& t, const std::set<std::string>& allowed, const std::string& where) const {
  for (auto& [k, v] : t)
    if (!allowed.count(std::string(k.str()))) {
      std::string list;
      for (auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(v, "unknown key '" + std::string(k.str()) + "' in " + where + "; allowed: " + list);
    }
}

const toml::table* TomlReader::table(const toml::table& t, const char* key, const std::string& where) const {
  const toml::node* n = t.get(key);
  if (!n) return nullptr;
  if (!n->is_table()) fail(*n, where + "." + key + " must be a table");
  return n->as_table();
}

std::string TomlReader::str(const toml::table& t, const char* key, const std::string& where, bool required,
                            const std::string& fallback) const {
  const toml::node* n = t.get(key);
  if (!n) {
    if (required) fail(t, where + " needs " + key + " = \"...\"");
    return fallback;
  }
  if (!n->is_string()) fail(*n, where + "." + key + " must be a string");
  return *n->value<std::string>();
}

int64_t TomlReader::integer(const toml::table& t, const char* key, const std::string& where, int64_t fallback) const {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_integer() || *n->value<int64_t>() < 0) fail(*n, where + "." + key + " must be a whole number >= 0");
  return *n->value<int64_t>();
}

std::vector<std::string> TomlReader::strings(const toml::table& t, const char* key, const std::string& where) const {
  std::vector<std::string> out;
  const toml::node* n = t.get(key);
  if (!n) return out;
  const toml::array* a = n->as_array();
  if (!a) fail(*n, where + "." + key + " must be a list of strings");
  for (auto& v : *a) {
    if (!v.is_string()) fail(v, where + "." + key + " must be a list of strings");
    out.push_back(*v.value<std::string>());
  }
  return out;
}

std::map<std::string, std::string> TomlReader::string_table(const toml::table& t, const std::string& where) const {
  std::map<std::string, std::string> out;
  for (auto& [k, v] : t) {
    if (!v.is_string()) fail(v, where + "." + std::string(k.str()) + " must be a string");
    out[std::string(k.str())] = *v.value<std::string>();
  }
  return out;
}

}  // namespace pkb::gen
