// What pkb runs for a model: its candidate, through `pkb eval` in a child process (a hang or
// crash costs that turn only, and the candidate's ranks are sandboxed as in any pkb eval),
// and the tools SHOW (`pkb show`'s text) and SHAPES (`pkb dryrun`'s table of outputs).
#pragma once

#include "rank/settings.hpp"

#include <string>
#include <vector>

#include "launch/subprocess.hpp"
#include "spec/registry.hpp"

namespace pkb::agent {

// How every candidate of a run is evaluated. Negative counts keep pkb eval's defaults.
struct EvalSettings {
  std::string pkb;                       // the executable run as `pkb eval` and `pkb dryrun`
  std::vector<std::string> global_args;  // --root, --problem-dir, --reference-lib: the same problems
  std::string device = "cpu";            // cpu or cuda
  rank::EvalSettings settings;           // what each evaluation measures: pkb eval's own settings
  double timeout = 0;        // pkb eval --timeout (per phase); 0: pkb's budgets
  double deadline_s = 3600;  // the whole child; killed after it
};

// No --seed: every evaluation draws its own secret seed, which stays in pkb eval.
std::vector<std::string> eval_argv(const EvalSettings& s, const std::string& problem, int world,
                                   const std::string& candidate, const std::string& json_out);
std::vector<std::string> dryrun_argv(const EvalSettings& s, const std::string& problem, int world);

// SHOW: the spec and the reference's source, as `pkb show` prints them, paths relative to
// `root`.
std::string show_text(const spec::Registry& registry, const spec::ProblemSpec& s, const std::string& root);

// SHAPES: "rank r: name dtype[shape] ..." per rank from `pkb dryrun`'s table (never its seed).
std::string shapes_text(const launch::ProcessResult& dryrun);

}  // namespace pkb::agent
