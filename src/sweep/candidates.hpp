// Finding the candidates of a sweep: solution files laid out as `pkb generate` writes them
// (solutions_<backend>/<run>/<problem>/sample_<k>.<ext>), by hand
// (solutions_<backend>/<problem>.<ext>), or as the original ParallelKernelBench names them
// (<run>/<id>_<name>_<backend>.py), and the grid of evaluations they make.
#pragma once

#include "rank/settings.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/registry.hpp"

namespace pkb::sweep {

struct Candidate {
  std::string path;     // as found under the folder the user named
  std::string problem;  // the problem's slug
  int problem_id = 0;
  std::string category;
  std::string run;      // the model or run it came from: <run> above, or the folder of a hand-written one
  int sample = 0;       // <k> of sample_<k>; 0 for a hand-written one
  std::string backend;  // cuda, cpu, triton, tk or original
  std::string device;   // where it runs: "cpu" for cpu candidates and .py ones under a cpu/ folder, "cuda" for
                        // the others; "" for the reference as the candidate (rank::kReferenceSolution), either
  std::string sha256;   // of the source bytes
};

struct Discovery {
  std::vector<Candidate> candidates;  // by problem id, run, sample, path
  std::vector<std::string> skipped;   // "path: why" for solution files that name no known problem
  // "path: why" for every module in the original's format that pkb could not place (or
  // cannot run: a ParallelKittens one, a problem whose original call pkb does not know).
  std::vector<std::string> unplaced;
};

// Where a file of the original ParallelKernelBench (`<id>_<name>_<backend>.py`, its stem
// given) belongs: the problem whose original stem it carries, numbered as today or as in
// the original's first release (ids 34-88 were 33-87, four problems had other names); or
// why it belongs nowhere. `backend` is the suffix (cuda, triton, parallelkittens), "" if none.
struct OriginalPlace {
  const spec::ProblemSpec* spec = nullptr;
  std::string backend;
  std::string why;  // when spec is null
};
OriginalPlace place_original(const std::string& stem, const spec::Registry& registry);

// What a file's path says about it: problem key (a slug, id or stem; not yet checked), run,
// sample and backend. Returns false for files that are not candidates (by extension).
bool parse_candidate_path(const std::string& path, std::string& problem_key, std::string& run, int& sample,
                          std::string& backend);

// The device a candidate runs on: cpu for the cpu backend and for .py (triton, original)
// candidates under a folder named cpu (torch ops on the CPU device); cuda for the rest.
std::string device_of_candidate(const std::string& path, const std::string& backend);

// Walks `roots` (folders, searched recursively, or single files; rank::kReferenceSolution
// stands for the reference of every problem as its candidate). Throws std::runtime_error
// when a root does not exist.
Discovery discover(const std::vector<std::string>& roots, const spec::Registry& registry);

// The problems `--problems` names: "all", a category key, or a comma list of slugs, ids or
// stems. Throws std::invalid_argument naming the fix.
std::vector<std::string> select_problems(const std::string& selector, const spec::Registry& registry);

// What every evaluation of a sweep shares.
struct Settings {
  std::string device;        // "cpu" or "cuda"
  rank::EvalSettings eval;   // what each measures: pkb eval's own settings
  double timeout = 0;        // --timeout per phase, passed on
};

struct Task {
  Candidate candidate;
  int world = 0;
  std::optional<uint64_t> seed;  // --seed replays one for every evaluation; else each draws its own
  std::string key;  // what makes an evaluation the same one again (resume)
};

// The resume key: the candidate (its path, so identical samples each count, and its
// content), problem, world size, size and the settings that change what is
// measured. Not the seed: a re-run draws new inputs but is the same evaluation.
std::string task_key(const Candidate& c, int world, const Settings& s);

// The shard `index` of `count` (contiguous, so a problem's evaluations stay together and its
// reference is timed on as few nodes as possible).
std::vector<Task> shard(const std::vector<Task>& tasks, int index, int count);

}  // namespace pkb::sweep
