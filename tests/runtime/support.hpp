// Running the real pkb binary from tests, and finding processes it left behind.
#pragma once

#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace pkbtest {

struct PkbRun {
  int code = -1;
  std::string out, err;
  double seconds = 0;
  std::string tag;  // PKB_TEST_TAG given to this run and inherited by its ranks
};

// Runs `pkb args...` on the CPU device unless args say otherwise.
PkbRun run_pkb(const std::vector<std::string>& args, double timeout_s = 600,
               const std::vector<std::pair<std::string, std::string>>& env = {});

// Processes whose environment holds PKB_TEST_TAG=tag (waits up to `grace_s` for them to go).
std::vector<pid_t> survivors(const std::string& tag, double grace_s = 2.0);

std::string temp_dir(const std::string& name);
bool contains(const std::string& haystack, const std::string& needle);

}  // namespace pkbtest
