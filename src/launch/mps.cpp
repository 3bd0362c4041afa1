#include "launch/mps.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <unistd.h>

#include "launch/subprocess.hpp"

namespace pkb::launch {

namespace fs = std::filesystem;

std::unique_ptr<MpsDaemon> MpsDaemon::start(std::string& why_not) {
  std::string control = which("nvidia-cuda-mps-control");
  if (control.empty()) {
    why_not = "nvidia-cuda-mps-control is not on PATH";
    return nullptr;
  }
  std::string tmpl = (fs::temp_directory_path() / "pkb-mps-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    why_not = "cannot create a folder for MPS under " + fs::temp_directory_path().string();
    return nullptr;
  }
  std::unique_ptr<MpsDaemon> d(new MpsDaemon(tmpl));
  fs::create_directories(d->dir_ + "/pipe");
  fs::create_directories(d->dir_ + "/log");
  ProcessResult r = run_process({control, "-d"}, 30, d->env());
  if (!r.ok()) {
    why_not = "nvidia-cuda-mps-control -d failed: " + (r.err.empty() ? r.out : r.err);
    return nullptr;  // the destructor removes the folders
  }
  // The daemon is up once its control socket exists.
  for (int k = 0; k < 100 && !fs::exists(d->dir_ + "/pipe/control"); ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!fs::exists(d->dir_ + "/pipe/control")) {
    why_not = "the MPS daemon did not open its control pipe";
    return nullptr;
  }
  return d;
}

MpsDaemon::~MpsDaemon() {
  if (fs::exists(dir_ + "/pipe/control")) {
    run_process({"nvidia-cuda-mps-control"}, 20, env(), "quit\n");
    for (int k = 0; k < 250 && fs::exists(dir_ + "/pipe/control"); ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::vector<std::pair<std::string, std::string>> MpsDaemon::env() const {
  return {{"CUDA_MPS_PIPE_DIRECTORY", dir_ + "/pipe"}, {"CUDA_MPS_LOG_DIRECTORY", dir_ + "/log"}};
}

}  // namespace pkb::launch
