// A generation run: every (model, problem, sample) not yet on disk is asked for by a pool
// of --jobs workers. Each answer lands under
//   <out>/solutions_<backend>/<run>/<problem>/sample_<k>.<ext>            the extracted code
//   <out>/solutions_<backend>/<run>/<problem>/sample_<k>.response.json    the raw answer
//   <out>/solutions_<backend>/<run>/<problem>/prompt-<hash>.md            what was asked
//   <out>/solutions_<backend>/<run>/manifest.jsonl                         one line per request
// A sample exists once its response file does (written last, atomically), so a run killed
// at any point resumes where it stopped. SIGINT/SIGTERM stop it cleanly: requests in
// flight are abandoned, finished ones kept.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gen/client.hpp"
#include "gen/messages.hpp"
#include "gen/models.hpp"
#include "gen/progress.hpp"

namespace pkb::gen {

struct Task {
  std::string problem;  // slug
  Prompt prompt;
};

struct Target {
  Model model;
  std::string key;  // from the environment; used in headers only
  std::string run_name;
  std::string run_dir;  // <out>/solutions_<backend>/<run_name>
};

struct RunSettings {
  int samples = 1;
  int jobs = 4;
  bool force = false;  // ask again for samples that exist
  RetryPolicy policy;
  std::string extension;                             // of the code files: cu, cpp, py
  std::vector<std::string> tags;                     // fence tags of the backend, preferred first
  nlohmann::ordered_json labels = nlohmann::ordered_json::object();  // backend, shots, ...: into the manifest
};

struct ModelTally {
  int skipped = 0;                                     // there already
  int ok = 0, no_code = 0, failed = 0, not_asked = 0;  // not_asked: after the model stopped
  std::string stop_reason;                             // why the model stopped, "" when it did not
  int requests = 0;                                    // sent (retries of one sample count once)
  int64_t tokens_in = 0, tokens_out = 0;
  double latency_s = 0;            // summed over requests (the answering attempt of each)
  std::optional<double> cost_usd;  // summed, when the model has prices
};

struct RunSummary {
  std::vector<ModelTally> models;  // as Targets
  int64_t tokens_in = 0, tokens_out = 0;
  bool interrupted = false;
  std::string fatal;  // pkb's own failure (a file it could not write); the run stopped
};

// "<model>_<backend>_<precision>_<hardware>_<shots>", safe as a folder name: runs whose
// prompts differ in any of these never share a folder (and so never resume each other).
std::string run_name(const std::string& model, const std::string& backend, const std::string& precision,
                     const std::string& hardware, const std::string& shots);


RunSummary run_generation(const std::vector<Target>& targets, const std::vector<Task>& tasks, const RunSettings& s,
                          Progress& progress);

// What run_generation would ask for, and asks nothing (--dry-run): per target, the samples
// not yet on disk (all of them with `force`).
std::vector<int> pending_requests(const std::vector<Target>& targets, const std::vector<Task>& tasks,
                                  const RunSettings& s);

// The model a sample is asked with: with a seed, sample k gets seed + k, so that samples
// differ and a rerun repeats them.
Model model_for_sample(const Model& m, int sample);

}  // namespace pkb::gen
