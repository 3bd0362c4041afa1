// Per-call timing on the host clock: the CPU device's CallTimer.
#pragma once

#include <chrono>
#include <vector>

#include "device/device.hpp"

namespace pkb::device {

class HostTimer : public CallTimer {
 public:
  explicit HostTimer(int n) : t_(2 * n) {}
  void start(int i) override { t_[2 * i] = std::chrono::steady_clock::now(); }
  void stop(int i) override { t_[2 * i + 1] = std::chrono::steady_clock::now(); }
  std::vector<double> elapsed_us() override {
    std::vector<double> us(t_.size() / 2);
    for (size_t i = 0; i < us.size(); ++i)
      us[i] = std::chrono::duration<double, std::micro>(t_[2 * i + 1] - t_[2 * i]).count();
    return us;
  }

 private:
  std::vector<std::chrono::steady_clock::time_point> t_;
};

}  // namespace pkb::device
