#include "io/toml_reader.hpp"

#include "io/text.hpp"

#include <algorithm>
#include <filesystem>

namespace pkb::io {

namespace {

std::string joined(const std::set<std::string>& items) {
  std::string list;
  for (auto& a : items) list += (list.empty() ? "" : ", ") + a;
  return list;
}

}  // namespace

TomlReader::TomlReader(std::string path) : path_(std::move(path)) {
  if (!std::filesystem::exists(path_)) throw InputError(path_ + ": not found");
  if (std::filesystem::is_directory(path_)) throw InputError(path_ + ": is a folder, not a TOML file");
  try {
    doc_ = toml::parse_file(path_);
  } catch (const toml::parse_error& e) {
    // Line 0: the file could not be read at all (permissions, a special file).
    if (e.source().begin.line == 0) throw InputError(path_ + ": cannot read: " + std::string(e.description()));
    throw InputError(path_ + ":" + std::to_string(e.source().begin.line) +
                     ": malformed TOML: " + std::string(e.description()));
  }
}

void TomlReader::fail(const toml::node* at, const std::string& what) const {
  std::string where = path_;
  if (at && at->source().begin.line) where += ":" + std::to_string(at->source().begin.line);
  throw InputError(where + ": " + what);
}

void TomlReader::only_keys(const toml::table& t, const std::set<std::string>& allowed, const std::string& where) const {
  for (auto&& [k, v] : t) {
    std::string key(k.str());
    if (allowed.count(key)) continue;
    std::string near = nearest(key, std::vector<std::string>(allowed.begin(), allowed.end()));
    fail(v, "unknown key '" + key + "' in " + where + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                "; allowed: " + joined(allowed));
  }
}

const toml::node& TomlReader::need(const toml::table& t, const char* key, const std::string& where,
                                   const std::string& example) const {
  const toml::node* n = t.get(key);
  if (!n) fail(t, "missing '" + std::string(key) + "' in " + where + "; add " + example);
  return *n;
}

std::string TomlReader::str(const toml::node& n, const std::string& what) const {
  if (auto v = n.value<std::string>(); v && n.is_string()) return *v;
  fail(n, what + " must be a string");
}

int64_t TomlReader::integer(const toml::node& n, const std::string& what) const {
  if (n.is_integer()) return *n.value<int64_t>();
  fail(n, what + " must be an integer");
}

double TomlReader::real(const toml::node& n, const std::string& what) const {
  if (n.is_integer() || n.is_floating_point()) return *n.value<double>();
  fail(n, what + " must be a number");
}

bool TomlReader::boolean(const toml::node& n, const std::string& what) const {
  if (n.is_boolean()) return *n.value<bool>();
  fail(n, what + " must be true or false");
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
  return str(*n, where + "." + key);
}

int64_t TomlReader::count(const toml::table& t, const char* key, const std::string& where, int64_t fallback) const {
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
  for (auto& v : *a) out.push_back(str(v, where + "." + key + " entries"));
  return out;
}

std::map<std::string, std::string> TomlReader::string_table(const toml::table& t, const std::string& where) const {
  std::map<std::string, std::string> out;
  for (auto& [k, v] : t) out[std::string(k.str())] = str(v, where + "." + std::string(k.str()));
  return out;
}

}  // namespace pkb::io
