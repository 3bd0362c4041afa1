#include "sweep/candidates.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "build/builder.hpp"
#include "build/sha256.hpp"
#include "rank/job.hpp"
#include "io/files.hpp"

namespace pkb::sweep {

namespace fs = std::filesystem;

namespace {

std::string backend_of_extension(const std::string& ext) {
  if (ext == ".cu") return "cuda";
  if (ext == ".cpp" || ext == ".cc" || ext == ".cxx") return "cpu";
  if (ext == ".py") return "triton";
  return "";
}

// "sample_12" -> 12; -1 for anything else.
int sample_index(const std::string& stem) {
  const std::string prefix = "sample_";
  if (stem.rfind(prefix, 0) != 0 || stem.size() == prefix.size()) return -1;
  std::string digits = stem.substr(prefix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) return -1;
  return std::stoi(digits);
}

}  // namespace

bool parse_candidate_path(const std::string& path, std::string& problem_key, std::string& run, int& sample,
                          std::string& backend) {
  fs::path p(path);
  backend = backend_of_extension(p.extension().string());
  if (backend.empty()) return false;
  std::vector<std::string> dirs;  // innermost first
  for (fs::path d = p.parent_path(); !d.empty() && d.has_filename(); d = d.parent_path()) dirs.push_back(d.filename());
  // The nearest solutions_<backend> folder names the backend (tk candidates are .cu files too).
  for (auto& d : dirs)
    if (d.rfind("solutions_", 0) == 0 && d.size() > 10) {
      backend = d.substr(10);
      break;
    }
  std::string stem = p.stem().string();
  sample = sample_index(stem);
  if (sample >= 0) {  // <run>/<problem>/sample_<k>
    problem_key = dirs.size() > 0 ? dirs[0] : "";
    run = dirs.size() > 1 ? dirs[1] : "";
  } else {            // <folder>/<problem>.<ext>
    sample = 0;
    problem_key = stem;
    run = dirs.size() > 0 ? dirs[0] : "";
  }
  if (run.empty()) run = "solutions_" + backend;
  return true;
}

std::string device_of_candidate(const std::string& path, const std::string& backend) {
  if (backend == "cpu") return "cpu";
  if (backend != "triton" && backend != "original") return "cuda";
  // A .py candidate under a folder named cpu (solutions_triton/cpu/<problem>.py) uses torch
  // ops on the CPU device; the rest are Triton on CUDA.
  for (fs::path d = fs::path(path).parent_path(); !d.empty() && d.has_filename(); d = d.parent_path()) {
    if (d.filename() == "cpu") return "cpu";
    if (d.filename().string().rfind("solutions_", 0) == 0) break;
  }
  return "cuda";
}

namespace {

// The original's first release named four problems otherwise (its stem -> today's).
const std::map<std::string, std::string> kFirstReleaseNames = {
    {"11_gemm_allgather_AT", "11_allgather_gemm_AT"},
    {"12_gemm_allgather", "12_allgather_gemm"},
    {"14_gemm_allscatter", "14_gemm_allgather"},
    {"18_rms_norm", "18_tp_rms_norm"},
};

const spec::ProblemSpec* by_stem(const spec::Registry& registry, const std::string& stem) {
  for (auto& s : registry.all())
    if (s.stem == stem) return &s;
  return nullptr;
}

// "<digits>_<rest>" -> (digits, rest); id -1 when the stem does not start so.
std::pair<int, std::string> split_id(const std::string& stem) {
  size_t u = stem.find('_');
  if (u == 0 || u == std::string::npos || u > 3 || stem.find_first_not_of("0123456789") != u) return {-1, stem};
  return {std::stoi(stem.substr(0, u)), stem.substr(u + 1)};
}

}  // namespace

OriginalPlace place_original(const std::string& file_stem, const spec::Registry& registry) {
  OriginalPlace out;
  std::string stem = file_stem;
  for (std::string b : {"cuda", "triton", "parallelkittens"}) {
    std::string tail = "_" + b;
    if (stem.size() > tail.size() && stem.compare(stem.size() - tail.size(), tail.size(), tail) == 0) {
      out.backend = b;
      stem = stem.substr(0, stem.size() - tail.size());
      break;
    }
  }
  if ((out.spec = by_stem(registry, stem))) return out;  // today's numbering
  auto renamed = kFirstReleaseNames.find(stem);
  if (renamed != kFirstReleaseNames.end() && (out.spec = by_stem(registry, renamed->second))) return out;
  auto [id, name] = split_id(stem);
  if (id >= 34 && id <= 88 && (out.spec = by_stem(registry, std::to_string(id - 1) + "_" + name))) return out;
  if (stem == "47_fsdp_adamw_sharded")
    out.why = "the original's first release had 47_fsdp_adamw_sharded (later 46), which it then replaced by "
              "46_gemv_decode; pkb has no such problem";
  else
    out.why = "'" + stem + "' is the stem of no problem of the original, numbered as today or as in its first release "
              "(`pkb list` shows the stems)";
  return out;
}

Discovery discover(const std::vector<std::string>& roots, const spec::Registry& registry) {
  Discovery found;
  std::vector<std::string> files;
  for (auto& root : roots) {
    // The reference as the candidate: one for every problem, on whichever device the sweep
    // runs (a sanity run of pkb: docs/sweep.md).
    if (rank::is_reference_solution(root)) {
      for (auto& s : registry.all()) {
        if (s.category == "test") continue;
        Candidate c;
        c.path = root;
        c.problem = s.slug;
        c.problem_id = s.id;
        c.category = s.category;
        c.run = "reference";
        c.backend = "reference";
        c.sha256 = build::sha256_hex(io::read_file(registry.reference_source(s)) + io::read_file(s.path));
        found.candidates.push_back(std::move(c));
      }
      continue;
    }
    std::error_code ec;
    if (fs::is_regular_file(root, ec)) {
      files.push_back(root);
      continue;
    }
    if (!fs::is_directory(root, ec))
      throw std::runtime_error("--solutions " + root + ": no such file or folder");
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename().string().rfind('.', 0) == 0) {  // hidden: caches, editors' files
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      // A folder sample_<k> holds the turns of a pkb agent sample (its candidate is the
      // file sample_<k>.<ext> beside it): transcripts, not candidates.
      if (it->is_directory() && sample_index(it->path().filename().string()) >= 0) {
        it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file()) files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());

  for (auto& file : files) {
    Candidate c;
    c.path = file;
    std::string key;
    if (!parse_candidate_path(file, key, c.run, c.sample, c.backend)) continue;  // notes, specs, logs
    const spec::ProblemSpec* spec = nullptr;
    std::string text = c.backend == "triton" ? io::read_file(file) : "";
    if (c.backend == "triton" && build::is_original_format(text)) {
      // A module in the original's format: a generated sample names its problem by folder;
      // a file of the original's by its stem (<id>_<name>_<backend>).
      c.backend = "original";
      std::string why;
      std::string suffix;
      if (sample_index(fs::path(file).stem().string()) >= 0) {
        try {
          spec = &registry.find(key);
        } catch (const spec::SpecError&) {
          why = "'" + key + "' is not a problem (`pkb list` shows them)";
        }
      } else {
        OriginalPlace at = place_original(key, registry);
        spec = at.spec;
        why = at.why;
        suffix = at.backend;
        // The run: the folder (above a cpu/ one, which says the device), told apart by
        // backend when the folder does not say it.
        fs::path folder = fs::path(file).parent_path();
        if (folder.filename() == "cpu" && folder.parent_path().has_filename()) c.run = folder.parent_path().filename();
        if (!suffix.empty() && c.run.find(suffix) == std::string::npos) c.run += "_" + suffix;
      }
      if (spec && text.find("utils.parallelkittens_runtime") != std::string::npos)
        why = "a ParallelKittens module: it needs the original's utils.parallelkittens_runtime and ThunderKittens' "
              "TKParallelTensor, which pkb does not provide (port it to a ThunderKittens candidate of pkb's C ABI)";
      else if (spec && !spec->original.declared)
        why = "pkb does not know how the original called " + spec->slug + "'s solution (no [original] in its spec)";
      else if (spec && !spec->original.unsupported.empty())
        why = "pkb cannot run it for " + spec->slug + ": " + spec->original.unsupported;
      if (!why.empty()) {
        found.unplaced.push_back(file + ": " + why);
        continue;
      }
    } else {
      try {
        spec = &registry.find(key);
      } catch (const spec::SpecError&) {
        found.skipped.push_back(file + ": '" + key + "' is not a problem (`pkb list` shows them)");
        continue;
      }
    }
    c.problem = spec->slug;
    c.problem_id = spec->id;
    c.category = spec->category;
    c.device = device_of_candidate(file, c.backend);
    c.sha256 = build::sha256_hex(text.empty() ? io::read_file(file) : text);
    found.candidates.push_back(std::move(c));
  }
  // Problem-major, by the benchmark's problem ids: a problem's evaluations run back to back,
  // so its reference is timed once and then served from pkb eval's cache.
  std::sort(found.candidates.begin(), found.candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.problem_id, a.problem, a.run, a.sample, a.path) <
           std::tie(b.problem_id, b.problem, b.run, b.sample, b.path);
  });
  return found;
}

std::vector<std::string> select_problems(const std::string& selector, const spec::Registry& registry) {
  std::vector<std::string> slugs;
  if (selector == "all") {
    for (auto& s : registry.all()) slugs.push_back(s.slug);
    return slugs;
  }
  if (!spec::category_name(selector).empty()) {
    for (auto& s : registry.all())
      if (s.category == selector) slugs.push_back(s.slug);
    if (slugs.empty()) throw std::invalid_argument("--problems " + selector + ": no problem in that category yet");
    return slugs;
  }
  std::stringstream list(selector);
  for (std::string key; std::getline(list, key, ',');) {
    if (key.empty()) continue;
    try {
      slugs.push_back(registry.find(key).slug);
    } catch (const spec::SpecError& e) {
      throw std::invalid_argument(std::string("--problems: ") + e.what() +
                                  " (give all, a category key such as coll, or a comma list of problems)");
    }
  }
  if (slugs.empty()) throw std::invalid_argument("--problems is empty; give all, a category key, or a comma list");
  return slugs;
}

std::string task_key(const Candidate& c, int world, const Settings& s) {
  std::string flags;
  for (auto& f : rank::to_flags(s.eval)) flags += " " + f;
  return c.path + "|" + c.problem + "|W=" + std::to_string(world) + "|device=" + c.device + "|settings:" + flags +
         "|sha256=" + c.sha256;
}

std::vector<Task> shard(const std::vector<Task>& tasks, int index, int count) {
  size_t begin = tasks.size() * static_cast<size_t>(index) / static_cast<size_t>(count);
  size_t end = tasks.size() * static_cast<size_t>(index + 1) / static_cast<size_t>(count);
  return std::vector<Task>(tasks.begin() + static_cast<long>(begin), tasks.begin() + static_cast<long>(end));
}

}  // namespace pkb::sweep
