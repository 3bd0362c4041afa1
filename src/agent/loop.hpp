// pkb agent: for every (model, problem, sample), a conversation in which the model writes a
// candidate, pkb evaluates it as `pkb eval` does and answers with feedback, and the model
// tries again, until a budget runs out, a correct candidate is fast enough, or the model
// says DONE. Samples run `jobs` at a time; evaluations one at a time (they share the
// machine). Everything lands under
//   <run_dir>/results.jsonl                                one pkb.eval/1 line per evaluated turn
//   <run_dir>/<problem>/sample_<k>.<ext>                    the sample's best correct candidate
//   <run_dir>/<problem>/sample_<k>/prompt.json              the first turn's system and user text
//   <run_dir>/<problem>/sample_<k>/turn_<t>/                request.json response.json reply.txt
//                                                          candidate.<ext> eval.json feedback.txt turn.json
//   <run_dir>/<problem>/sample_<k>/sample.json              where the sample stands
//   <run_dir>/<problem>/sample_<k>/transcript.md            the conversation, verbatim
// A turn is finished once its turn.json exists (written last); an answer is kept as soon
// as it arrives. A run killed at any point resumes without asking or evaluating a finished
// turn again, and re-asks nothing it already has an answer for.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/book.hpp"
#include "agent/tools.hpp"
#include "gen/client.hpp"
#include "gen/runner.hpp"
#include "spec/registry.hpp"

namespace pkb::agent {

// Per sample; 0 means no limit.
struct Budget {
  int turns = 10;
  int64_t tokens = 0;   // input and output tokens over the sample's requests
  double wall_s = 0;    // the sample's own seconds: requests, evaluations, tools
  double device_s = 0;  // seconds of its evaluations and dryruns
  std::optional<double> until_speedup;  // stop once a correct candidate is at least this fast
};

struct Problem {
  const spec::ProblemSpec* spec = nullptr;
  int world = 0;       // where it is asked and evaluated
  gen::Prompt prompt;  // `pkb prompt`'s text; the [agent] intro follows it
};

struct Settings {
  int samples = 1, jobs = 4;
  Budget budget;
  EvalSettings eval;
  gen::RetryPolicy policy;
  std::string backend, backend_name, extension;  // cuda, "CUDA C++", cu
  std::vector<std::string> tags;                 // fence tags, preferred first
  std::string root;                              // for SHOW's paths and to keep pkb's paths out of feedback
  const spec::Registry* registry = nullptr;
  Book book;
};

struct ModelTally {
  int finished = 0;    // samples that ran their course (budget, target or DONE)
  int correct = 0;     // of them, with a correct candidate
  int failed = 0;      // stopped by a request that failed (after its retries, or refused); a rerun resumes them
  int not_asked = 0;   // after the model stopped
  std::string stop_reason;  // why the model stopped (bad key, unknown model), "" when it did not
};

struct Summary {
  std::vector<ModelTally> models;  // as targets
  int64_t tokens_in = 0, tokens_out = 0;
  std::string fatal;  // pkb's own failure (a file it could not write, pkb eval refusing its command)
};

using Log = std::function<void(const std::string& line)>;  // called one line at a time

// The run folder's name for a model's agent run.
std::string run_name(const std::string& model, const std::string& backend, const std::string& precision,
                     const std::string& hardware, const std::string& shots);

// Throws gen::GenError when a run folder is being written by another pkb agent.
Summary run_agent(const std::vector<gen::Target>& targets, const std::vector<Problem>& problems, const Settings& s,
                  const Log& log);

}  // namespace pkb::agent
