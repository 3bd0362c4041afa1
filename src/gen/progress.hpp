// The progress of a generation run on stderr: on a terminal one bar redrawn in place
// (counts, tokens, errors) with notices printed above it; elsewhere one line per event,
// which reads well in a log file.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace pkb::gen {

class Progress {
 public:
  Progress(FILE* out, bool terminal);

  void begin(int total);
  void started();
  // status: ok, no_code, failed, model_stopped, interrupted.
  void finished(const std::string& label, const std::string& status, int64_t tokens_in, int64_t tokens_out,
                double seconds, const std::string& detail);
  void retrying(const std::string& label, const std::string& why, double wait_s);
  void notice(const std::string& line);
  void tick();  // redraws the clock
  void end();

 private:
  void draw();  // callers hold mu_
  void print(const std::string& line);
  FILE* out_;
  bool terminal_;
  std::mutex mu_;
  int total_ = 0, running_ = 0, ok_ = 0, no_code_ = 0, failed_ = 0, retries_ = 0;
  int64_t tokens_in_ = 0, tokens_out_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace pkb::gen
