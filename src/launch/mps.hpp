// A private MPS daemon for runs where several ranks share one GPU: with it their kernels
// run side by side, so device-side spin barriers between co-resident ranks take
// microseconds instead of milliseconds of time-slicing.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pkb::launch {

class MpsDaemon {
 public:
  // Starts a daemon with its own pipe and log folders. Returns nullptr and says why in
  // `why_not` when it cannot (no nvidia-cuda-mps-control, or it refused to start).
  static std::unique_ptr<MpsDaemon> start(std::string& why_not);
  ~MpsDaemon();  // quits the daemon and removes its folders

  // What ranks need in their environment to reach this daemon.
  std::vector<std::pair<std::string, std::string>> env() const;
  const std::string& dir() const { return dir_; }

 private:
  explicit MpsDaemon(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

}  // namespace pkb::launch
