#include "gen/progress.hpp"

namespace pkb::gen {

namespace {

std::string tokens(int64_t n) {
  char buf[32];
  if (n < 1000) return std::to_string(n);
  snprintf(buf, sizeof buf, n < 1000000 ? "%.1fk" : "%.1fM", n < 1000000 ? n / 1e3 : n / 1e6);
  return buf;
}

std::string seconds_text(double s) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

std::string clock(double s) {
  char buf[32];
  int t = static_cast<int>(s);
  snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  return buf;
}

}  // namespace

Progress::Progress(FILE* out, bool terminal) : out_(out), terminal_(terminal), t0_(std::chrono::steady_clock::now()) {}

void Progress::begin(int total) {
  std::lock_guard<std::mutex> lock(mu_);
  total_ = total;
  t0_ = std::chrono::steady_clock::now();
  draw();
}

void Progress::started() {
  std::lock_guard<std::mutex> lock(mu_);
  ++running_;
  draw();
}

void Progress::finished(const std::string& label, const std::string& status, int64_t in, int64_t out, double seconds,
                        const std::string& detail) {
  std::lock_guard<std::mutex> lock(mu_);
  --running_;
  tokens_in_ += in;
  tokens_out_ += out;
  if (status == "ok")
    ++ok_;
  else if (status == "no_code")
    ++no_code_;
  else if (status != "interrupted")
    ++failed_;
  std::string line = label + ": " + (status == "no_code" ? "no code" : status) + " (" + tokens(in) + " in, " +
                     tokens(out) + " out, " + seconds_text(seconds) + ")" + (detail.empty() ? "" : ": " + detail);
  // On a terminal the bar counts successes; failures still deserve a line of their own.
  if (!terminal_ || (status != "ok" && status != "interrupted")) print(line);
  draw();
}

void Progress::retrying(const std::string& label, const std::string& why, double wait_s) {
  std::lock_guard<std::mutex> lock(mu_);
  ++retries_;
  print(label + ": " + why + "; retrying in " + seconds_text(wait_s));
  draw();
}

void Progress::notice(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  print(line);
  draw();
}

void Progress::tick() {
  std::lock_guard<std::mutex> lock(mu_);
  draw();
}

void Progress::end() {
  std::lock_guard<std::mutex> lock(mu_);
  if (terminal_) fprintf(out_, "\r\033[K");
  fflush(out_);
}

void Progress::print(const std::string& line) { fprintf(out_, "%s%s\n", terminal_ ? "\r\033[K" : "", line.c_str()); }

void Progress::draw() {
  if (!terminal_) return;
  int done = ok_ + no_code_ + failed_;
  const int width = 24;
  int filled = total_ ? done * width / total_ : width;
  std::string bar(filled, '#');
  bar.resize(width, '.');
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  fprintf(out_, "\r\033[K[%s] %d/%d  running %d  no code %d  errors %d  retries %d  tokens %s in, %s out  %s",
          bar.c_str(), done, total_, running_, no_code_, failed_, retries_, tokens(tokens_in_).c_str(),
          tokens(tokens_out_).c_str(), clock(elapsed).c_str());
  fflush(out_);
}

}  // namespace pkb::gen
