#include "report/results.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "eval/record.hpp"

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

// Why a correct evaluation's timing says nothing about speed, "" when it does.
std::string timing_note(const eval::Record& r) {
  if (!r.speedup) return "untimed";
  if (r.run.device != "cuda") return "CPU device";
  if (r.run.ranks_per_gpu != 1 || r.has_flag("shared_gpu")) return "shared GPU";
  if (r.has_flag("throttled")) return "throttled clocks";
  if (r.has_flag("left_processes")) return "processes left behind";
  // noisy_gate and noisy_reference: older records' (the gate's spread is in the interval now).
  if (r.has_flag("noisy_timing") || r.has_flag("noisy_gate") || r.has_flag("noisy_reference")) return "noisy timing";
  if (r.has_flag("host_mismatch")) return "hosts apart";  // an older record's: the two processes' host speeds
  if (eval::timing_in_doubt(r.flags)) return "timing violation";
  return "";
}

// Where the candidate is, absolutely: as recorded (pkb eval writes candidate.abs_path),
// else its path if that is absolute or found from here or from the results file's folder.
std::string locate(const eval::Record& r, const std::string& path, const fs::path& results_dir) {
  if (!r.candidate.abs_path.empty()) return r.candidate.abs_path;
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
std::string version_at(const eval::Record& r, const char* key, bool nccl) {
  const json* v = at_path(r.versions, {key});
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
void add_throughput(Evaluation& e, const eval::Record& r, const SpecLookup& specs) {
  if (r.busbw_gbps) e.busbw_gbps = r.busbw_gbps->candidate_gbps;
  const spec::ProblemSpec* s = specs ? specs(e.problem) : nullptr;
  e.collective = e.busbw_gbps.has_value() || e.category == "coll" || (s && !s->roofline.bus_factor.empty());
  if (e.collective || !s || s->roofline.flops.empty() || !e.candidate_us || *e.candidate_us <= 0 || !e.world) return;
  try {
    double flops = s->roofline.flops.eval(s->roofline_vars(e.size, e.world, 0, e.dtype == s->dtype ? "" : e.dtype));
    if (flops > 0) e.tflops = flops / (*e.candidate_us * 1e-6) / 1e12;
  } catch (const std::exception&) {  // a size or W the spec no longer takes: no TFLOP/s
  }
}

Evaluation evaluation_of(const eval::Record& r, const std::string& file, const SpecLookup& specs) {
  Evaluation e;
  fs::path dir = fs::path(file).parent_path();
  e.file = file;
  e.problem = r.problem;
  e.verdict = r.verdict ? eval::verdict_name(*r.verdict) : "";
  e.message = r.message;
  e.category = r.category;
  e.problem_id = r.problem_id;
  e.world = r.run.world;
  e.size = r.run.size;
  e.device = r.run.device.empty() ? "?" : r.run.device;
  e.gpu = r.run.gpu;
  e.dtype = r.run.dtype;
  e.seed = r.run.seed;
  e.hardware_profile = r.run.hardware_profile;
  e.ranks_per_gpu = r.run.ranks_per_gpu;
  e.trials = r.run.trials;
  e.warmup = r.run.warmup;
  e.iters = r.run.iters;
  e.trials_run = r.run.trials_run;
  if (r.run.counts) {
    e.warmup_used = r.run.counts->candidate_warmup;
    e.iters_used = r.run.counts->candidate_iters;
  }
  e.pkb_version = string_at(r.versions, {"pkb"});
  e.commit = string_at(r.versions, {"commit"});
  e.torch = string_at(r.versions, {"torch"});
  e.nccl = version_at(r, "nccl", true);
  e.cuda_runtime = version_at(r, "cuda_runtime", false);
  e.cuda_driver = version_at(r, "cuda_driver", false);
  e.time = r.time;
  e.path = r.candidate.path;
  e.sha256 = r.candidate.sha256;
  e.backend = r.candidate.backend;
  e.abs_path = locate(r, e.path, dir);
  e.shown_path = e.abs_path.empty() ? e.path : relative_to(e.abs_path, dir.empty() ? fs::path(".") : dir);
  e.run = r.sweep && !r.sweep->run.empty() ? r.sweep->run : run_of_path(e.path);
  e.sample = r.sweep ? r.sweep->sample : 0;
  e.key = r.sweep ? r.sweep->task : "";
  e.turn = r.agent ? r.agent->turn : 0;
  e.parallel = std::max(1, r.sweep ? r.sweep->parallel.value_or(1) : 1);
  e.speedup = r.speedup;
  e.timing_in_doubt = eval::timing_in_doubt(r.flags);
  e.timing_counts = eval::timing_counts(r);
  if (e.correct()) e.timing_note = timing_note(r);
  if (r.roofline) e.roofline_fraction = r.roofline->fraction;
  if (r.timing) {
    const eval::Stats &c = r.timing->candidate, &ref = r.timing->reference;
    e.candidate_us = c.median;
    e.reference_us = ref.median;
    // The speedup if both sides sat at opposite quartiles of their timed calls.
    if (e.speedup && r.timing->quartiles && c.p75 > 0) e.speedup_low = ref.p25 / c.p75;
    if (e.speedup && r.timing->quartiles && c.p25 > 0) e.speedup_high = ref.p75 / c.p25;
  }
  if (e.speedup && r.speedup_interval && r.speedup_interval->lo <= r.speedup_interval->hi) {
    e.interval_low = r.speedup_interval->lo;
    e.interval_high = r.speedup_interval->hi;
    e.interval_level = r.speedup_interval->level;
  }
  add_throughput(e, r, specs);
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

// The record `j` holds, if it is one this version can read (a later schema's verdict is not).
std::optional<eval::Record> record_of(const json& j) {
  if (!eval::Record::is_record(j)) return std::nullopt;
  try {
    return eval::Record::from_json(j);
  } catch (const std::exception&) {
    return std::nullopt;
  }
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
  auto add = [&](const eval::Record& rec, const std::string& file) {
    Evaluation e = evaluation_of(rec, file, specs);
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
    if (auto rec = record_of(whole)) {
      r.files.push_back(file);
      add(*rec, file);
      continue;
    }
    size_t results = 0, lines = 0, json_lines = 0, bad = 0;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      ++lines;
      json j = json::parse(line, nullptr, false);
      json_lines += !j.is_discarded();
      auto rec = record_of(j);
      if (!rec) {
        ++bad;
        continue;
      }
      ++results;
      add(*rec, file);
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
