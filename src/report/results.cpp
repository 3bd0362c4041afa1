#include "report/results.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "eval/verdict.hpp"

namespace pkb::report {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const json* at_path(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return nullptr;
    at = &(*at)[key];
  }
  return at;
}

std::optional<double> number_at(const json& j, std::initializer_list<const char*> path) {
  const json* at = at_path(j, path);
  return at && at->is_number() ? std::optional<double>(at->get<double>()) : std::nullopt;
}

std::optional<int> int_at(const json& j, std::initializer_list<const char*> path) {
  auto v = number_at(j, path);
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

std::string string_at(const json& j, std::initializer_list<const char*> path, const std::string& fallback = "") {
  const json* at = at_path(j, path);
  return at && at->is_string() ? at->get<std::string>() : fallback;
}

// Lines outside a sweep (pkb eval --json files gathered by hand) belong to the folder
// their candidate sits in, as a sweep would have named their run.
std::string run_of_path(const std::string& path) {
  fs::path p(path);
  std::string parent = p.parent_path().filename().string();
  if (p.stem().string().rfind("sample_", 0) == 0) parent = p.parent_path().parent_path().filename().string();
  return parent.empty() ? "(unnamed)" : parent;
}

// A quartile of one side's timed calls; older results carry only the median and the IQR.
std::optional<double> quartile(const json& j, const char* side, bool upper) {
  if (auto q = number_at(j, {"timing", side, upper ? "p75_us" : "p25_us"})) return q;
  auto median = number_at(j, {"timing", side, "median_us"});
  auto iqr = number_at(j, {"timing", side, "iqr_us"});
  if (!median || !iqr) return std::nullopt;
  return *median + (upper ? 0.5 : -0.5) * *iqr;
}

// Why a correct evaluation's timing says nothing about speed, "" when it does.
std::string timing_note(const json& j) {
  if (!j.value("speedup", json()).is_number()) return "untimed";
  const json& run = j.value("run", json::object());
  if (run.value("device", "") != "cuda") return "CPU device";
  const json& flags = j.value("flags", json::array());
  auto has = [&](const char* f) { return std::find(flags.begin(), flags.end(), f) != flags.end(); };
  if (run.value("ranks_per_gpu", 1) != 1 || has("shared_gpu")) return "shared GPU";
  if (has("throttled")) return "throttled clocks";
  if (has("left_processes")) return "processes left behind";
  if (has("noisy_timing") || has("noisy_gate") || has("noisy_reference")) return "noisy timing";
  if (has("host_mismatch")) return "hosts apart";  // an older record's: the two processes' host speeds
  if (eval::timing_in_doubt(flags)) return "timing violation";
  return "";
}

// Where the candidate is, absolutely: as recorded (pkb eval writes candidate.abs_path),
// else its path if that is absolute or found from here or from the results file's folder.
std::string locate(const json& j, const std::string& path, const fs::path& results_dir) {
  std::string recorded = string_at(j, {"candidate", "abs_path"});
  if (!recorded.empty()) return recorded;
  if (path.empty()) return "";
  fs::path p(path);
  std::error_code ec;
  if (p.is_absolute()) return p.lexically_normal().string();
  if (fs::exists(p, ec)) return fs::absolute(p).lexically_normal().string();
  if (fs::exists(results_dir / p, ec)) return (results_dir / p).lexically_normal().string();
  return "";
}

std::string relative_to(const std::string& abs, const fs::path& dir) {
  std::error_code ec;
  fs::path rel = fs::path(abs).lexically_relative(fs::absolute(dir, ec).lexically_normal());
  return rel.empty() ? abs : rel.string();
}

// A version as people write it: NCCL's code 22809 is "2.28.9", CUDA's 13000 is "13.0";
// strings stay as they are; 0 or nothing is "".
std::string version_at(const json& j, const char* key, bool nccl) {
  const json* v = at_path(j, {"versions", key});
  if (!v) return "";
  if (v->is_string()) return v->get<std::string>();
  if (!v->is_number_integer() || v->get<long long>() <= 0) return "";
  long long n = v->get<long long>();
  if (nccl)
    return n >= 10000 ? std::to_string(n / 10000) + "." + std::to_string(n / 100 % 100) + "." + std::to_string(n % 100)
                      : std::to_string(n / 1000) + "." + std::to_string(n / 100 % 10) + "." + std::to_string(n % 100);
  return std::to_string(n / 1000) + "." + std::to_string(n % 1000 / 10);
}

// The throughput of a correct, timed evaluation: bus bandwidth for collectives (recorded by
// pkb eval), TFLOP/s of one rank for problems whose spec counts flops. A collective: its
// spec has a bus_factor, or its result a bus bandwidth, or it is in the coll category.
void add_throughput(Evaluation& e, const json& j, const SpecLookup& specs) {
  e.busbw_gbps = number_at(j, {"busbw_gbps", "candidate"});
  const spec::ProblemSpec* s = specs ? specs(e.problem) : nullptr;
  e.collective = e.busbw_gbps.has_value() || e.category == "coll" || (s && !s->roofline.bus_factor.empty());
  if (e.collective || !s || s->roofline.flops.empty() || !e.candidate_us || *e.candidate_us <= 0 || !e.world) return;
  try {
    double flops = s->roofline.flops.eval(s->roofline_vars(e.size, e.world, 0, e.dtype == s->dtype ? "" : e.dtype));
    if (flops > 0) e.tflops = flops / (*e.candidate_us * 1e-6) / 1e12;
  } catch (const std::exception&) {  // a size or W the spec no longer takes: no TFLOP/s
  }
}

Evaluation evaluation_of(const json& j, const std::string& file, const SpecLookup& specs) {
  Evaluation e;
  fs::path dir = fs::path(file).parent_path();
  e.file = file;
  e.problem = j["problem"];
  e.verdict = j["verdict"];
  e.message = string_at(j, {"message"});
  e.category = string_at(j, {"category"});
  e.problem_id = j.value("problem_id", json()).is_number_integer() ? j["problem_id"].get<int>() : 0;
  e.world = int_at(j, {"run", "world"}).value_or(0);
  e.size = string_at(j, {"run", "size"}, "default");
  e.device = string_at(j, {"run", "device"}, "?");
  e.gpu = string_at(j, {"run", "gpu"});
  e.dtype = string_at(j, {"run", "dtype"});
  e.seed = string_at(j, {"run", "seed"});
  e.hardware_profile = string_at(j, {"run", "hardware_profile"});
  e.ranks_per_gpu = int_at(j, {"run", "ranks_per_gpu"}).value_or(1);
  e.trials = int_at(j, {"run", "trials"});
  e.warmup = int_at(j, {"run", "warmup"});
  e.iters = int_at(j, {"run", "iters"});
  e.trials_run = int_at(j, {"run", "trials_run"});
  e.warmup_used = int_at(j, {"run", "counts", "candidate", "warmup"});
  e.iters_used = int_at(j, {"run", "counts", "candidate", "iters"});
  e.pkb_version = string_at(j, {"versions", "pkb"});
  e.commit = string_at(j, {"versions", "commit"});
  e.torch = string_at(j, {"versions", "torch"});
  e.nccl = version_at(j, "nccl", true);
  e.cuda_runtime = version_at(j, "cuda_runtime", false);
  e.cuda_driver = version_at(j, "cuda_driver", false);
  e.time = string_at(j, {"time"});
  e.path = string_at(j, {"candidate", "path"});
  e.sha256 = string_at(j, {"candidate", "sha256"});
  e.backend = string_at(j, {"candidate", "backend"});
  e.abs_path = locate(j, e.path, dir);
  e.shown_path = e.abs_path.empty() ? e.path : relative_to(e.abs_path, dir.empty() ? fs::path(".") : dir);
  e.run = string_at(j, {"sweep", "run"}, run_of_path(e.path));
  e.sample = int_at(j, {"sweep", "sample"}).value_or(0);
  e.key = string_at(j, {"sweep", "task"});
  e.turn = int_at(j, {"agent", "turn"}).value_or(0);
  e.parallel = std::max(1, int_at(j, {"sweep", "parallel"}).value_or(1));
  e.speedup = number_at(j, {"speedup"});
  e.timing_in_doubt = eval::timing_in_doubt(j.value("flags", json::array()));
  e.timing_counts = eval::timing_counts(j);
  if (e.correct()) e.timing_note = timing_note(j);
  e.roofline_fraction = number_at(j, {"roofline", "fraction"});
  e.candidate_us = number_at(j, {"timing", "candidate", "median_us"});
  e.reference_us = number_at(j, {"timing", "reference", "median_us"});
  auto ref_lo = quartile(j, "reference", false), ref_hi = quartile(j, "reference", true);
  auto cand_lo = quartile(j, "candidate", false), cand_hi = quartile(j, "candidate", true);
  if (e.speedup && ref_lo && cand_hi && *cand_hi > 0) e.speedup_low = *ref_lo / *cand_hi;
  if (e.speedup && ref_hi && cand_lo && *cand_lo > 0) e.speedup_high = *ref_hi / *cand_lo;
  auto lo = number_at(j, {"speedup_interval", "lo"}), hi = number_at(j, {"speedup_interval", "hi"});
  if (e.speedup && lo && hi && *lo <= *hi) {
    e.interval_low = lo;
    e.interval_high = hi;
    e.interval_level = number_at(j, {"speedup_interval", "level"});
  }
  add_throughput(e, j, specs);
  return e;
}

// The manifest.jsonl of generation runs whose samples were evaluated
// (<run dir>/<problem>/sample_<k>.<ext>), totalled per run.
void read_manifests(Results& r) {
  std::set<std::string> seen;
  fs::path first_dir = r.files.empty() ? fs::path(".") : fs::path(r.files.front()).parent_path();
  if (first_dir.empty()) first_dir = ".";
  for (auto& e : r.evaluations) {
    if (e.abs_path.empty() || fs::path(e.abs_path).stem().string().rfind("sample_", 0) != 0) continue;
    fs::path manifest = fs::path(e.abs_path).parent_path().parent_path() / "manifest.jsonl";
    if (!seen.insert(manifest.string()).second) continue;
    std::ifstream in(manifest);
    if (!in) continue;
    GenerationTotals t;
    t.run = e.run;
    t.manifest = relative_to(manifest.string(), first_dir);
    for (std::string line; std::getline(in, line);) {
      json m = json::parse(line, nullptr, false);
      if (!m.is_object() || !m.contains("status")) continue;
      ++t.requests;
      std::string status = m.value("status", "");
      t.ok += status == "ok";
      t.no_code += status == "no_code";
      t.failed += status != "ok" && status != "no_code";
      t.tokens_in += number_at(m, {"tokens_in"}).value_or(0);
      t.tokens_out += number_at(m, {"tokens_out"}).value_or(0);
      t.latency_s += number_at(m, {"latency_s"}).value_or(0);
      if (auto c = number_at(m, {"cost_usd"})) {
        t.cost_usd = t.cost_usd.value_or(0) + *c;
        ++t.priced;
      }
    }
    if (t.requests) r.generation[t.run] = t;
  }
}

bool is_result(const json& j) {
  return j.is_object() && j.value("schema", "") == "pkb.eval/1" && j.value("problem", json()).is_string() &&
         j.value("verdict", json()).is_string();
}

// Why a file that holds no result was left out, in a few words.
std::string why_no_result(size_t lines, size_t json_lines, const json& whole) {
  if (lines == 0) return "it is empty";
  if (whole.is_object()) {
    std::string schema = whole.value("schema", json()).is_string() ? whole["schema"].get<std::string>() : "";
    return schema.empty() ? "it holds a JSON object without a pkb.eval/1 schema"
                          : "it holds a JSON object of schema '" + schema + "', not pkb.eval/1";
  }
  if (json_lines == 0) return "it is not JSON (" + std::to_string(lines) + " line" + (lines == 1 ? "" : "s") + ")";
  return std::to_string(lines) + " line" + (lines == 1 ? "" : "s") + ", none of them a pkb.eval/1 result";
}

}  // namespace

Results load_results(const std::vector<std::string>& paths, const SpecLookup& specs) {
  Results r;
  std::vector<std::string> files;
  for (auto& path : paths) {
    if (fs::is_directory(path)) {
      std::vector<std::string> inside;
      for (auto& e : fs::directory_iterator(path)) {
        std::string ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".jsonl" || ext == ".json")) inside.push_back(e.path().string());
      }
      std::sort(inside.begin(), inside.end());
      if (inside.empty())
        throw std::runtime_error(path + " holds no results files (.jsonl from pkb sweep, .json from pkb eval --json)");
      files.insert(files.end(), inside.begin(), inside.end());
    } else if (fs::is_regular_file(path)) {
      files.push_back(path);
    } else {
      throw std::runtime_error(path + ": no such results file or folder");
    }
  }
  std::map<std::string, size_t> by_task;  // sweep task -> index in evaluations
  auto add = [&](const json& j, const std::string& file) {
    Evaluation e = evaluation_of(j, file, specs);
    if (!e.key.empty()) {
      // The same evaluation twice (a sweep re-run on a copy of its file): keep the later.
      auto [it, fresh] = by_task.emplace(e.key, r.evaluations.size());
      if (!fresh) {
        ++r.duplicates;
        r.evaluations[it->second] = std::move(e);
        return;
      }
    }
    r.evaluations.push_back(std::move(e));
  };
  for (auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    const std::string text = buf.str();
    // pkb eval --json writes one object over many lines: a file that parses whole is that.
    json whole = json::parse(text, nullptr, false);
    if (is_result(whole)) {
      r.files.push_back(file);
      add(whole, file);
      continue;
    }
    size_t results = 0, lines = 0, json_lines = 0, bad = 0;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      ++lines;
      json j = json::parse(line, nullptr, false);
      json_lines += !j.is_discarded();
      if (!is_result(j)) {
        ++bad;
        continue;
      }
      ++results;
      add(j, file);
    }
    if (results == 0) {
      r.skipped_files.push_back({file, why_no_result(lines, json_lines, whole)});
      continue;
    }
    r.files.push_back(file);
    r.bad_lines += bad;
  }
  read_manifests(r);
  return r;
}

}  // namespace pkb::report
