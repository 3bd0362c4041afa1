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

// A fresh folder under this test process's scratch, which goes when the process ends with
// its tests passed (kept, and named on stderr, after a failure).
std::string temp_dir(const std::string& name);
bool contains(const std::string& haystack, const std::string& needle);

// The problem-family tests (tests/problems/): `pkb dryrun --solution reference` on the CPU
// device at W ranks saves every rank's inputs and outputs; tests/check_problem.py recomputes
// them independently (tests/checks/<category>.py) and checks that an all-zero answer and the
// inputs passed through fail; `pkb validate` at the same W and size checks those and the
// answer without communication. Adds gtest failures; `size` is a --size value ("": default).
void expect_reference_recomputed(const std::string& problem, int world, const std::string& size = "");

// A family's example candidate for the CPU device (solutions_cpu/<problem>.cpp, the twin of
// its CUDA one): `correct` over a few trials and timed calls. Adds gtest failures.
void expect_cpu_candidate_correct(const std::string& problem, int world = 4, const std::string& size = "");

}  // namespace pkbtest
