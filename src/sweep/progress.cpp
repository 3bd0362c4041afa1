#include "sweep/progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pkb::sweep {

size_t Progress::failed() const {
  size_t n = 0;
  for (auto& [verdict, count] : verdicts)
    if (verdict != "correct") n += static_cast<size_t>(count);
  return n;
}

std::optional<double> Progress::seconds_left() const {
  if (done == 0 || elapsed_at_last_end_s <= 0) return std::nullopt;
  double per_evaluation = elapsed_at_last_end_s / static_cast<double>(done);
  double left = per_evaluation * static_cast<double>(total > done ? total - done : 0);
  return std::max(0.0, left - (elapsed_s - elapsed_at_last_end_s));
}

std::string duration_text(double seconds) {
  long s = std::lround(std::max(0.0, seconds));
  char buf[48];
  if (s < 90) snprintf(buf, sizeof buf, "%ld s", s);
  else if (s < 90 * 60) snprintf(buf, sizeof buf, "%ld min", (s + 30) / 60);
  else snprintf(buf, sizeof buf, "%ld h %02ld min", (s + 30) / 60 / 60, (s + 30) / 60 % 60);
  return buf;
}

std::string Progress::line(int width) const {
  int fill = total ? static_cast<int>(width * static_cast<double>(done) / static_cast<double>(total)) : width;
  std::string out = "[" + std::string(fill, '#') + std::string(width - fill, '.') + "] " + std::to_string(done) + "/" +
                    std::to_string(total);
  out += " | " + std::to_string(failed()) + " failed";
  auto left = seconds_left();
  out += left ? " | ~" + duration_text(*left) + " left" : std::string(" | estimating time left");
  if (built < to_build) out += " | built " + std::to_string(built) + "/" + std::to_string(to_build);
  if (!running.empty()) {
    out += " | " + running.front();
    if (running.size() > 1) out += " (+" + std::to_string(running.size() - 1) + " more)";
  }
  return out;
}

}  // namespace pkb::sweep
