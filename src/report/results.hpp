// Reading evaluation results (pkb.eval/1) from the files and folders a user names: the
// JSON Lines a sweep writes (one object per line), the pretty-printed object `pkb eval
// --json` writes, a Slurm job's folder of task files, or several of them to merge. Also the
// generation manifests (pkb generate) of the runs the results name, for their token,
// latency and cost totals.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace pkb::report {

// The fields of one result line that the report reads.
struct Evaluation {
  std::string problem, category, size = "default", verdict, message, run, path, key;
  std::string shown_path;  // the candidate relative to the results file's folder (else as recorded)
  std::string abs_path;    // the candidate's absolute path, "" when it cannot be told
  std::string file;        // the results file the line came from
  std::string backend;  // cuda, cpu, triton, tk ("" in results that do not say)
  std::string sha256, device, gpu, dtype, seed, hardware_profile, pkb_version, commit, time;
  // The software the evaluation ran with ("versions"), as people write it ("" when not recorded):
  // torch "2.11.0+cu130", NCCL "2.28.9", CUDA runtime and driver "13.0".
  std::string torch, nccl, cuda_runtime, cuda_driver;
  int problem_id = 0, world = 0, sample = 0, ranks_per_gpu = 1;
  std::optional<int> trials, warmup, iters;
  // The calls made where the time budgets cut the settings' counts (run.counts, run.trials_run).
  std::optional<int> trials_run, warmup_used, iters_used;
  int turn = 0;  // pkb agent's turn (from 1) that made this candidate; 0 for any other line
  int parallel = 1;  // evaluations its sweep ran at once (sweep.parallel): over 1, the timing shared the node
  std::optional<double> speedup, roofline_fraction, candidate_us, reference_us;
  // The speedup if both sides sat at opposite quartiles of their timed calls:
  // [reference Q1 / candidate Q3, reference Q3 / candidate Q1].
  std::optional<double> speedup_low, speedup_high;
  // The speedup's interval as pkb eval recorded it (`speedup_interval`: {"lo", "hi",
  // "level"}, a confidence interval at that level); none in results without one.
  std::optional<double> interval_low, interval_high, interval_level;
  // A collective (its spec has a roofline bus_factor; its result a bus bandwidth): its
  // throughput is bus bandwidth in GB/s, nccl-tests' busbw. Other problems: TFLOP/s of one
  // rank (the spec's roofline flops over the candidate's median), where the spec has flops.
  bool collective = false;
  std::optional<double> busbw_gbps, tflops;
  bool timing_in_doubt = false;  // flags that put the timing in doubt (eval/record.hpp)
  // Whether the timing says anything about speed (eval::timing_counts: correct, the CUDA
  // device with a GPU per rank, nothing in doubt). Only such timings are fast, best or
  // averaged.
  bool timing_counts = false;
  std::string timing_note;  // a correct one's timing that does not count: why ("CPU device", ...)
  bool correct() const { return verdict == "correct"; }
  bool compiled() const { return verdict != "compile_error"; }
};

// A generation run's totals, from its manifest.jsonl (every request it ever made).
struct GenerationTotals {
  std::string run, manifest;  // manifest: as shown (relative to the first results file's folder)
  int requests = 0, ok = 0, no_code = 0, failed = 0;
  long long tokens_in = 0, tokens_out = 0;
  double latency_s = 0;  // summed over requests
  std::optional<double> cost_usd;  // summed over priced requests; none when no request had a price
  int priced = 0;                  // requests with a cost
};

// A file named (or found in a named folder) that holds no result, and why.
struct SkippedFile {
  std::string file, why;
};

struct Results {
  std::vector<std::string> files;  // read, in order, each holding at least one result
  std::vector<SkippedFile> skipped_files;
  std::vector<Evaluation> evaluations;
  size_t bad_lines = 0;   // not JSON, or not pkb.eval/1 (a torn last line, another schema)
  size_t duplicates = 0;  // the same sweep task recorded again: the later line wins
  std::map<std::string, GenerationTotals> generation;  // by run, for runs whose manifest was found
};

// The spec of a problem by slug, or nullptr when it is not known here: for the TFLOP/s of
// results and whether a problem is a collective.
using SpecLookup = std::function<const spec::ProblemSpec*(const std::string& slug)>;

// Reads results files of either form (a file that parses as one JSON object is one result;
// anything else is JSON Lines), and the *.jsonl and *.json files directly in folders. A
// file holding no result is recorded in skipped_files with the reason. Throws
// std::runtime_error when a path does not exist or a folder holds no results file.
Results load_results(const std::vector<std::string>& paths, const SpecLookup& specs = {});

}  // namespace pkb::report
