// What a rank is told to do: the job the parent hands every rank over the bootstrap
// channel (launch/channel.hpp), as a typed struct with its defaults stated here, once, and
// its JSON form. The commands fill it (their flags bind to these fields); the rank's jobs
// (src/jobs/) read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pkb::rank {

struct Job {
  std::string mode;  // dryrun, selftest, eval, validate

  // Where the rank runs (filled per rank by the launcher).
  int rank = 0, world = 1;
  std::string device = "cpu";  // cpu or cuda
  int gpu = -1;                // CUDA ordinal, -1 on the CPU device
  std::string comm = "gloo";   // the references' communicator: nccl, shm or gloo

  // The problem.
  std::string spec;            // path of problems/<slug>.toml
  std::string size = "default";  // a --size value
  std::string dtype;           // what dt stands for ("": the spec's)
  uint64_t seed = 0;           // the run's secret seed
  std::vector<std::string> reference_libs;
  int trials = 100;
  std::string save_dir;        // write outputs here ("": nowhere)

  // dryrun, validate
  bool no_comm = false;        // dryrun: every collective a no-op

  // selftest
  size_t heap_bytes = 0;       // a symmetric heap of this size per rank (0: none)
  int barrier_iters = 2000;

  // eval
  std::string library;         // the candidate's shared object
  int warmup = 500, iters = 100;
  bool timing = true;
  std::string cache = "cold";  // cold: evict the L2 before each timed call
  bool time_reference = true;  // false: the parent has the reference's timing cached
  size_t set_budget_bytes = size_t{1} << 30;       // distinct timed input sets
  size_t capture_budget_bytes = size_t{1} << 30;   // timed calls' outputs, captured as each ends
  size_t candidate_heap_bytes = 0;  // the candidate's own heap; 0: twice its inputs and outputs, >= 256 MiB
  bool sandbox = true;         // confine the candidate (rank/sandbox.hpp)
};

nlohmann::json to_json(const Job& j);
// Throws nlohmann::json::exception on a malformed job (a pkb bug, never user input).
Job job_from_json(const nlohmann::json& j);

}  // namespace pkb::rank
