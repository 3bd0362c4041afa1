// The pkb.eval/1 record (docs/results.md), typed: what pkb eval writes, pkb sweep and pkb
// agent add to, and pkb report, the sweep's progress and the agent's feedback read, each
// through these fields. JSON only at the edge: to_json writes it, from_json reads it back,
// older records' keys included (a key this version does not type is kept as it was in
// `rest`, so a record read and written again loses nothing). Torch-free.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/interleave.hpp"
#include "eval/reports.hpp"
#include "eval/stats.hpp"

namespace pkb::eval {

// The candidate as it was evaluated.
struct CandidateFile {
  std::string path, abs_path, sha256;
  std::string backend;  // cuda, cpu, triton, tk, original, reference
};

// The calls each side made (`run.counts`): where the time budgets cut the settings' counts.
struct CallCounts {
  int candidate_warmup = 0, candidate_iters = 0, captured = 0;
  int reference_warmup = 0, reference_iters = 0, baseline = 0, baseline_warmup = 0;
};

// Where and how it ran (`run`): as far as known when the record was made.
struct RunInfo {
  int world = 0, ranks_per_gpu = 1;
  std::string device, size = "default", dtype, gpu, comm, hardware_profile, cache;
  std::string ranks_started;  // "forked" (from pkb's fork server) or "exec" ("": not said)
  std::string fork_server_failed;  // why the fork server did not serve, where it did not ("": it did)
  std::string seed;  // decimal; "" when pkb eval drew a secret one that nobody knows yet (null)
  std::optional<int> gpus, trials, warmup, iters, trials_run, leftovers_ended;
  std::optional<bool> sandbox, mps;
  std::optional<CallCounts> counts;
  // Written by pkb eval and read by people: launch/cpus.hpp's plan, the budgets, the
  // settings (rank/settings.hpp), the memory plan. Null when absent.
  nlohmann::json cpus, budgets_s, settings, memory_plan;
  nlohmann::json rest = nlohmann::json::object();  // keys of older records
};

// The speedup's interval: `level` confidence by `method`.
struct Interval {
  double lo = 0, hi = 0, level = 0.95;
  std::string method = "rounds";
};

struct BusBandwidth {
  double reference_gbps = 0, candidate_gbps = 0;
};

struct Roofline {
  double bound_us = 0, fraction = 0;
  std::string limiter;  // nvlink, hbm or flops
  double nvlink_us = 0, hbm_us = 0, flops_us = 0;
};

// The timed rounds (eval/interleave.hpp): how many, of how many calls, why they ended.
struct RoundsSummary {
  int count = 0, block = 0;
  std::string stop;  // interval, rounds or budget
  double seconds = 0, target = 0;
  interleave::Estimate estimate;
  std::vector<std::array<double, 2>> medians_us;  // each round's [reference, candidate]
};

// The reference timed in the judges' own processes, beside the baseline and at the rounds'
// ends: how much the machine itself slowed, and what the bound on the reference credited;
// the judges' device probe then (after the reference's blocks and after the candidate's).
struct MachinePace {
  Stats baseline, rounds;
  double credited = 1;
  std::optional<Stats> probe_baseline, probe_after_reference, probe_after_candidate;
};

// `timing`: both sides' calls in the rounds and the reference's baseline.
struct TimingSummary {
  Stats reference, candidate, baseline;
  bool quartiles = true;  // false: an older record gave the two sides neither quartiles nor IQR
  std::string clock;  // judge (CUDA) or candidate_rank (the CPU device)
  std::optional<RoundsSummary> rounds;  // none in records from before the rounds
  std::string reference_slowed;         // why the speedup was capped; "" when it was not
  std::optional<MachinePace> machine;   // none where the judges did not time it (memory, older records)
  // The candidate rank's threads through each side's blocks (none on older records), and
  // what of the candidate was seen beside the reference's calls ("" where nothing was).
  std::optional<HostShare> host_reference, host_candidate;
  std::string candidate_beside;
  std::optional<double> copy_median_us;
  std::optional<Stats> candidate_self;  // the candidate rank's own events (CUDA)
  std::optional<GateOverhead> gate_overhead;
  nlohmann::json rest = nlohmann::json::object();  // keys of older records
};

struct EscapeSummary {
  int calls = 0;
  double host_us = 0, event_us = 0, baseline_us = 0;
  std::string capture;
};

// Outputs that passed with elements outside atol/rtol, within the spec's mismatch allowance.
struct Tolerated {
  int outputs = 0;
  int64_t max_elements = 0;
};

// Added by the command that ran the evaluation (docs/results.md, docs/sweep.md, docs/agent.md).
struct SweepTag {
  std::string run, task;
  int sample = 0;
  std::optional<int> parallel, batch;
};
struct AgentTag {
  std::string model;
  int turn = 0;
  int64_t tokens = 0;
  double wall_s = 0;
};
struct SlurmTag {
  std::string job, folder;
};

struct Record {
  std::string problem, category;
  int problem_id = 0;
  std::string time;  // UTC, when the evaluation started ("" when it never did)
  CandidateFile candidate;
  RunInfo run;
  nlohmann::json versions;  // pkb, commit, torch, cuda_runtime, cuda_driver, nccl, compiler; null before
  std::optional<Verdict> verdict;  // none until judged (written as "")
  std::string message;
  std::optional<Failure> failure;
  std::optional<TimingSummary> timing;  // a correct, timed run's
  std::optional<double> speedup;
  std::optional<Interval> speedup_interval;
  std::optional<BusBandwidth> busbw_gbps;
  std::optional<Roofline> roofline;
  std::vector<std::string> flags;
  std::optional<Tolerated> mismatch_tolerated;
  std::optional<EscapeSummary> escape_check;
  std::optional<Clocks> clocks;
  std::optional<double> wall_s, build_s;
  // Read by people only: where the wall time went, each side's phases, the sandbox's state.
  nlohmann::json costs_s, phases_ms, sandbox;
  std::optional<SweepTag> sweep;
  std::optional<AgentTag> agent;
  std::optional<SlurmTag> slurm;
  nlohmann::json rest = nlohmann::json::object();  // keys this version does not know

  bool correct() const { return verdict == Verdict::correct; }
  bool has_flag(const std::string& f) const;
  void set_verdict(Verdict v, std::string why) {
    verdict = v;
    message = std::move(why);
  }

  nlohmann::json to_json() const;
  // Throws std::invalid_argument when `j` is no pkb.eval/1 record (another schema, no
  // problem, a verdict that is none) and nlohmann::json::exception on a malformed field.
  static Record from_json(const nlohmann::json& j);
  // Whether `j` looks like a record (its schema, a problem, a verdict string).
  static bool is_record(const nlohmann::json& j);
};

// A finished record with no measurement: `verdict` and `message`, and `flag` (no_result,
// no_code) saying why pkb eval's own record is missing.
Record unmeasured_record(Record head, Verdict verdict, const std::string& message, const std::string& flag,
                         double wall_s);

// Whether flags put a timing in doubt (throttled clocks, ranks sharing a GPU, processes left
// behind, a violation of the timing rules, older records' noisy baseline).
bool timing_in_doubt(const std::vector<std::string>& flags);
// Whether a record's timing says anything about speed: correct, on the CUDA device with a
// GPU per rank, and not in doubt.
bool timing_counts(const Record& r);

}  // namespace pkb::eval
