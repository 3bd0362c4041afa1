// Running the real pkb binary from tests, and finding processes it left behind.
#pragma once

#include <ostream>
#include <spawn.h>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

#include "launch/subprocess.hpp"

namespace pkbtest {

// The source tree. Inline, so it is made before the static objects of any file including
// this one (the test parameters built from it).
inline const std::string kSrc = PKB_SOURCE_DIR;

// The collectives' size where a test does not check the size: M = N = 256, a 16th of the
// default's elements (each call's fresh inputs, checks and reference cost that much less).
inline const std::string kSmallCollectives = "M=256,N=256";

struct PkbRun {
  int code = -1;
  std::string out, err;
  double seconds = 0;
  std::string tag;  // PKB_TEST_TAG given to this run and inherited by its ranks
};

// Runs `pkb args...` on the CPU device unless args say otherwise.
PkbRun run_pkb(const std::vector<std::string>& args, double timeout_s = 600,
               const std::vector<std::pair<std::string, std::string>>& env = {});

// Starts `pkb args...` with `env` set over this process's environment (a name in `env`
// replaces the inherited one) and `actions` for its descriptors; returns its pid without
// waiting. Throws std::runtime_error when it cannot start.
pid_t spawn_pkb(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env,
                const posix_spawn_file_actions_t& actions);

// pkb with `args`, its stderr on a pseudo-terminal (what a user's terminal would show),
// stdout into `stdout_path`, stdin from /dev/null, and `env` set over this process's
// environment. Waits for it; `status` is waitpid's.
struct TerminalRun {
  int status = -1;
  std::string err;
};
TerminalRun run_pkb_on_terminal(const std::vector<std::string>& args, const std::string& stdout_path,
                                const std::vector<std::pair<std::string, std::string>>& env = {});

// tests/<script>, a Python check, with `args`: in a child of the check server where ctest
// started one (tests/check_server.py: torch imported once for every check), else in a
// Python of its own; the same check either way. Through the server, `out` holds both streams.
pkb::launch::ProcessResult run_python_check(const std::string& script, const std::vector<std::string>& args,
                                            double timeout_s);

// Processes whose environment holds PKB_TEST_TAG=tag (waits up to `grace_s` for them to go).
std::vector<pid_t> survivors(const std::string& tag, double grace_s = 2.0);

// A fresh folder under this test process's scratch, which goes when the process ends with
// its tests passed (kept, and named on stderr, after a failure).
std::string temp_dir(const std::string& name);
bool contains(const std::string& haystack, const std::string& needle);

// The problem-family tests (tests/problems/). A case is a problem at W ranks and a size
// (a --size value, "": default); cases of one W and size form a group, which runs in one
// pkb call on one set of ranks and one Python process: most of a case's cost was starting
// them (libtorch in W + 1 processes, torch in Python).
struct Case {
  std::string problem;
  int world = 4;
  std::string size;
};
struct CaseGroup {
  int world = 4;
  std::string size;
  std::vector<std::string> problems;
  std::string name;  // W<world>[_<size, spelled for gtest>], unique within one list of cases
};
std::vector<CaseGroup> group_cases(const std::vector<Case>& cases);
void PrintTo(const CaseGroup& g, std::ostream* os);

// The element-type flags of the problem tests: none (each spec's own, bf16 mostly) where
// this CPU has bf16 instructions, `--dtype fp32` where it has none, as on AVX2-only hosts:
// there ATen emulates bf16 265-300x slower than float32 and a problem's test outlasts any
// time limit (bench/results/cpu_same_code.md). The first call says which on stderr. The
// references' bf16 results are checked where the CPU has it and on every GPU run.
std::vector<std::string> problem_dtype_flags();

// Every benchmark problem (problems/*.toml) at W = 1 where it runs and at the smallest
// W >= 2 it takes, grouped by W and size. Sizes are the defaults but for the problems whose
// default trials take seconds each on two cores, which run smaller (kCpuSizes in
// support.cpp; the H200 runs use the defaults). Named W<world>[_<its first problem>].
std::vector<CaseGroup> every_problem();

// A group on the CPU device: at W > 1 `pkb validate --save-outputs` (every reference, and
// zeros, the inputs passed through and the reference without communication must fail its
// comparison), at W = 1 `pkb dryrun --save-outputs`; then tests/check_problem.py recomputes
// every rank's saved outputs from its saved inputs (tests/checks/<category>.py) and checks
// that an all-zero answer and the inputs passed through fail. Adds gtest failures.
void expect_references_recomputed(const CaseGroup& g);

// A family's example candidate for the CPU device (solutions_cpu/<problem>.cpp, the twin of
// its CUDA one): `correct` over a few trials and timed calls. Adds gtest failures.
void expect_cpu_candidate_correct(const std::string& problem, int world = 4, const std::string& size = "");

}  // namespace pkbtest
