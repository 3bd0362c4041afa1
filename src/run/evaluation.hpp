// pkb eval on the parent's side, as named phases over typed results: the run placed, the
// candidate built, each problem's memory planned, the ranks run (judges, then candidate
// ranks), each problem judged into its pkb.eval/1 record.
// Several problems run in turn on one start of the ranks only for the reference as the
// candidate (a sanity run of pkb: a candidate file is one problem's). cli/cmd_eval.cpp
// turns flags into an EvalRequest and prints what comes back. Torch-free.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "build/builder.hpp"
#include "eval/record.hpp"
#include "launch/placement.hpp"
#include "rank/job.hpp"
#include "run/ranks.hpp"
#include "spec/registry.hpp"

namespace pkb::run {

struct EvalRequest {
  std::vector<const spec::ProblemSpec*> problems;  // one; several only for rank::kReferenceSolution
  bool skip_unfit = false;  // several: leave out (with a line) those the world size does not fit, else refuse
  std::string solution;                            // a candidate file, or rank::kReferenceSolution
  std::string seed;                                // "": a fresh secret one
  std::string save;                                // --save-outputs
  std::string hardware = "auto", tk_dir;
  bool dry_plan = false;
  double heap_mib = 0, capture_mib = 0, memory_limit_gib = 0;
  rank::EvalSettings settings;  // what it measures (rank/settings.hpp states the defaults)
  launch::PlaceRequest place;
  RankSettings ranks;
  // Where pkb's data is: the problems' registry (for each reference's source), the root
  // holding hardware/ and include/.
  const spec::Registry* registry = nullptr;
  std::string root;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  // the command's start
};

struct EvalRun {
  std::vector<eval::Record> records;     // one pkb.eval/1 record per problem evaluated, in order
  int exit_code = 0;                    // the first problem's that is not correct; 0 when all are
  std::string plan;                     // dry_plan: the memory plans, nothing started
  // For stderr: a group that failed, every rank's phase and fate and its last lines; a
  // candidate that did not compile, the compiler's output.
  std::string details;
  bool interrupted = false;             // Ctrl-C: records of the problems finished before it only
};

// What the evaluation says as it goes (the command prints it): the header, the candidate,
// warnings. One line each, without the newline.
using Say = std::function<void(const std::string& line)>;

// A candidate file's device: a .cu file runs on the CUDA device, a .cpp file on the CPU
// device. Throws io::InputError, naming the fix, for a mismatch (`device_given`: the user
// chose the device, rather than pkb from what is visible).
void check_candidate_device(const std::string& solution, launch::Device device, bool device_given);

// Compiles a candidate file for the placed devices into the build cache (build/).
build::Result build_for(const std::string& root, const std::string& solution, const std::string& tk_dir,
                        const launch::Placement& p);

// Throws io::InputError for what the user must fix (a problem the world size does not fit,
// a plan that cannot fit the device, a bad seed or hardware profile).
EvalRun evaluate(const EvalRequest& request, const Say& say, const Say& warn);

}  // namespace pkb::run
