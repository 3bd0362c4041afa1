// A sweep's results: JSON Lines, one pkb.eval/1 object per evaluation, appended and flushed
// to disk as each evaluation ends. Opening it reads what earlier runs recorded (so a re-run
// resumes) and cuts off a line torn by a kill mid-write.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/record.hpp"

namespace pkb::sweep {

class ResultsFile {
 public:
  // Opens or creates `path` and locks it: a second sweep on the same file is refused.
  // Throws std::runtime_error naming the fix.
  explicit ResultsFile(const std::string& path);
  ~ResultsFile();
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;

  bool has(const std::string& task_key) const { return done_.count(task_key) > 0; }

  // Appends one line (one write, then fdatasync). Throws std::runtime_error on I/O errors.
  void append(const eval::Record& line) { append(line.to_json()); }
  void append(const nlohmann::json& line);

  size_t lines() const { return lines_; }
  size_t torn_bytes() const { return torn_bytes_; }  // cut off at open: a write a kill interrupted
  size_t bad_lines() const { return bad_lines_; }    // complete lines that are not JSON (left alone)

 private:
  void remember(const nlohmann::json& line);  // its task key

  std::string path_;
  int fd_ = -1;
  std::set<std::string> done_;
  size_t lines_ = 0, torn_bytes_ = 0, bad_lines_ = 0;
};

}  // namespace pkb::sweep
