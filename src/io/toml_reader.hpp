// Reading pkb's TOML files strictly (specs, hardware profiles, prompts, models): unknown
// keys and wrong types fail with one line, "file:line: what is wrong; the fix".
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/input_error.hpp"

namespace pkb::io {

class TomlReader {
 public:
  // Parses `path`. Throws InputError: "path: not found" or "path:line: malformed TOML: ...".
  explicit TomlReader(std::string path);

  const toml::table& doc() const { return doc_; }
  const std::string& path() const { return path_; }

  // Throws InputError "path:line: what" (the line of `at`, when known).
  [[noreturn]] void fail(const toml::node* at, const std::string& what) const;
  [[noreturn]] void fail(const toml::node& at, const std::string& what) const { fail(&at, what); }
  // Fails on the first key of `t` not in `allowed`, with a "did you mean" hint.
  void only_keys(const toml::table& t, const std::set<std::string>& allowed, const std::string& where) const;

  // A required value: fails naming `example` (what to add) when absent.
  const toml::node& need(const toml::table& t, const char* key, const std::string& where,
                         const std::string& example) const;
  // Typed values; `what` names the value in the error.
  std::string str(const toml::node& n, const std::string& what) const;
  int64_t integer(const toml::node& n, const std::string& what) const;
  double real(const toml::node& n, const std::string& what) const;  // integer or float
  bool boolean(const toml::node& n, const std::string& what) const;

  // A table under `key`, or nullptr when absent; fails when `key` holds something else.
  const toml::table* table(const toml::table& t, const char* key, const std::string& where) const;
  // Absent optional values give `fallback`; absent required ones fail.
  std::string str(const toml::table& t, const char* key, const std::string& where, bool required,
                  const std::string& fallback = "") const;
  // A whole number >= 0, or `fallback` when absent.
  int64_t count(const toml::table& t, const char* key, const std::string& where, int64_t fallback) const;
  std::vector<std::string> strings(const toml::table& t, const char* key, const std::string& where) const;
  // Every key of a table of strings.
  std::map<std::string, std::string> string_table(const toml::table& t, const std::string& where) const;

 private:
  std::string path_;
  toml::table doc_;
};

}  // namespace pkb::io
