// Reading evaluation results (pkb.eval/1, one JSON object per line) from the files and
// folders a user names: a sweep's results file, a Slurm job's folder of task files, or
// several of them to merge.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pkb::report {

// The fields of one result line that the report reads.
struct Evaluation {
  std::string problem, category, size = "default", verdict, run, path, key;
  std::string backend;  // cuda, cpu, triton, tk ("" in results that do not say)
  int problem_id = 0, world = 0, sample = 0;
  int turn = 0;  // pkb agent's turn (from 1) that made this candidate; 0 for any other line
  std::optional<double> speedup, roofline_fraction, candidate_us, reference_us;
  bool timing_in_doubt = false;  // flags that put the timing in doubt (eval/verdict.hpp)
  bool correct() const { return verdict == "correct"; }
  bool compiled() const { return verdict != "compile_error"; }
};

struct Results {
  std::vector<std::string> files;  // read, in order
  std::vector<Evaluation> evaluations;
  size_t bad_lines = 0;   // not JSON, or not pkb.eval/1 (a torn last line, another schema)
  size_t duplicates = 0;  // the same sweep task recorded again: the later line wins
};

// Reads .jsonl files, and the *.jsonl files directly in folders. Throws std::runtime_error
// when a path does not exist or nothing is found.
Results load_results(const std::vector<std::string>& paths);

}  // namespace pkb::report
