// Reading pkb generate's TOML files strictly: unknown keys and wrong types fail with
// "file:line: what is wrong".
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace pkb::gen {

class TomlReader {
 public:
  // Parses `path`. Throws GenError ("path:line: malformed TOML: ...").
  explicit TomlReader(std::string path);

  const toml::table& doc() const { return doc_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const toml::node& at, const std::string& what) const;
  void only_keys(const toml::table& t, const std::set<std::string>& allowed, const std::string& where) const;

  // A table under `key`, or nullptr when absent; fails when `key` holds something else.
  const toml::table* table(const toml::table& t, const char* key, const std::string& where) const;
  // Absent optional values give `fallback`; absent required ones fail, naming an example.
  std::string str(const toml::table& t, const char* key, const std::string& where, bool required,
                  const std::string& fallback = "") const;
  int64_t integer(const toml::table& t, const char* key, const std::string& where, int64_t fallback) const;
  std::vector<std::string> strings(const toml::table& t, const char* key, const std::string& where) const;
  // Every key of a table of strings.
  std::map<std::string, std::string> string_table(const toml::table& t, const std::string& where) const;

 private:
  std::string path_;
  toml::table doc_;
};

}  // namespace pkb::gen
