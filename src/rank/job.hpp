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

#include "launch/kinds.hpp"
#include "rank/settings.hpp"

namespace pkb::rank {

// pkb eval runs two kinds of rank side by side: judge ranks (the reference, the inputs, the
// comparisons; they never load a candidate) and candidate ranks (the candidate and its
// timing). Every other job has one kind.
enum class Role { single, judge, candidate };
const char* role_name(Role r);

// Why a rank failed, as the parent turns it into a verdict: abi (a candidate that does not
// fit the solution ABI: compile_error), sandbox (the candidate did what the sandbox
// denies: integrity_violation), error (anything else: crash).
enum class ErrorKind { error, abi, sandbox };
const char* error_kind_name(ErrorKind k);
ErrorKind error_kind_from_name(const std::string& name);  // "error" for any other name

// What --solution and Job::library say for the problem's own reference run as the candidate
// (`pkb eval --solution @reference`, eval/reference_candidate.hpp): there is no file.
inline constexpr char kReferenceSolution[] = "@reference";
inline bool is_reference_solution(const std::string& solution) { return solution == kReferenceSolution; }

// The job: an evaluation's settings (rank/settings.hpp; dryrun and validate use the ones
// that apply to them), and what this rank does with them, where.
struct Job : EvalSettings {
  std::string mode;  // dryrun, selftest, eval, validate
  Role role = Role::single;

  // Where the rank runs (filled per rank by the launcher).
  int rank = 0, world = 1;
  launch::Device device = launch::Device::cpu;
  int gpu = -1;                // CUDA ordinal, -1 on the CPU device
  launch::Comm comm = launch::Comm::gloo;  // the references' communicator
  // The CPU the rank's timed thread runs on while it times, and the one every other thread
  // of it runs on (launch/cpus.hpp); -1: wherever the system puts them.
  int timing_cpu = -1, partner_cpu = -1;

  // The problem: eval's one, or for dryrun and validate several, run in turn on the same
  // ranks (one start of the ranks for a whole family).
  std::vector<std::string> specs;  // paths of problems/<slug>.toml
  const std::string& spec() const { return specs.at(0); }
  uint64_t seed = 0;           // the run's secret seed
  std::vector<std::string> reference_libs;
  std::string save_dir;        // write outputs here ("": nowhere)
  bool save_by_problem = false;  // in save_dir/<slug>/ (the command was given several problems)

  // dryrun, validate
  bool no_comm = false;        // dryrun: every collective a no-op

  // selftest
  size_t heap_bytes = 0;       // a symmetric heap of this size per rank (0: none)
  int barrier_iters = 2000;

  std::string library;         // pkb eval: the candidate's shared object, .py file, or kReferenceSolution
  bool sandbox = true;         // confine the candidate (rank/sandbox.hpp)
  // pkb eval, one per problem of `specs` (several only for the reference as the candidate):
  // what the parent planned for it.
  struct EvalProblem {
    int captures = 20;  // the candidate's timed calls whose outputs the judge captures (all that fit)
    size_t candidate_heap_bytes = 0;  // the candidate's own heap; 0: twice its inputs and outputs, >= 256 MiB
    bool judge_paces = true;  // the judges time the reference in their own processes too (memory allowing)
  };
  std::vector<EvalProblem> eval_problems;
  const EvalProblem& eval_problem(size_t k) const { return eval_problems.at(k); }
};

nlohmann::json to_json(const Job& j);
// Throws nlohmann::json::exception on a malformed job (a pkb bug, never user input).
Job job_from_json(const nlohmann::json& j);

}  // namespace pkb::rank
