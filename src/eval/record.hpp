// The pkb.eval/1 record (docs/results.md) and the `pkb eval` command line, each built in
// one place: pkb eval writes the record, pkb sweep and pkb agent start `pkb eval` children
// and write a record themselves only for a child that left none (or a sample with no code).
// Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/reports.hpp"
#include "rank/settings.hpp"

namespace pkb::eval {

// What a record names before anything ran.
struct RecordHead {
  std::string problem, category;
  int problem_id = 0;
  std::string candidate_path, candidate_abs_path, candidate_sha256, backend;
  nlohmann::json run = nlohmann::json::object();  // world, device, size, seed, ... as far as known
};

// A record with every field of pkb.eval/1, null where nothing is known yet: verdict and
// message empty, no failure, timing, speedup, bus bandwidth or roofline, no flags.
nlohmann::json new_record(const RecordHead& head);

// A finished record with no measurement: `verdict` and `message`, and `flag` (no_result,
// no_code) saying why pkb eval's own record is missing.
nlohmann::json unmeasured_record(const RecordHead& head, Verdict verdict, const std::string& message,
                                 const std::string& flag, double wall_s);

// How another command runs one evaluation: the evaluation's settings (rank/settings.hpp)
// and where it runs, each a flag of `pkb eval`, so pkb sweep and pkb agent evaluate alike.
struct EvalCommand {
  std::string pkb;                       // the executable
  std::vector<std::string> global_args;  // --root, --problem-dir, --reference-lib: the same problems
  std::string problem, solution;
  int world = 0;
  std::string device;              // cuda or cpu
  rank::EvalSettings settings;     // those at their default are not spelled out
  std::optional<uint64_t> seed;    // none: pkb eval draws its own secret seed
  double timeout = 0;  // --timeout per phase; 0: pkb's budgets
  std::string cpus;    // --cpus: the CPUs its pinning may take ("": any)
  std::string json_out;

  std::vector<std::string> argv() const;
};

}  // namespace pkb::eval
