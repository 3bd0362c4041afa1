#include "report/results.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "eval/verdict.hpp"

namespace pkb::report {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::optional<double> number_at(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return std::nullopt;
    at = &(*at)[key];
  }
  return at->is_number() ? std::optional<double>(at->get<double>()) : std::nullopt;
}

std::string string_at(const json& j, const char* object, const char* key, const std::string& fallback) {
  if (!j.contains(object) || !j[object].is_object()) return fallback;
  const json& v = j[object].value(key, json());
  return v.is_string() ? v.get<std::string>() : fallback;
}

// Lines outside a sweep (pkb eval --json files gathered by hand) belong to the folder
// their candidate sits in, as a sweep would have named their run.
std::string run_of_path(const std::string& path) {
  fs::path p(path);
  std::string parent = p.parent_path().filename().string();
  if (p.stem().string().rfind("sample_", 0) == 0) parent = p.parent_path().parent_path().filename().string();
  return parent.empty() ? "(unnamed)" : parent;
}

}  // namespace

Results load_results(const std::vector<std::string>& paths) {
  Results r;
  for (auto& path : paths) {
    if (fs::is_directory(path)) {
      std::vector<std::string> inside;
      for (auto& e : fs::directory_iterator(path))
        if (e.is_regular_file() && e.path().extension() == ".jsonl") inside.push_back(e.path().string());
      std::sort(inside.begin(), inside.end());
      if (inside.empty()) throw std::runtime_error(path + " holds no .jsonl results files");
      r.files.insert(r.files.end(), inside.begin(), inside.end());
    } else if (fs::is_regular_file(path)) {
      r.files.push_back(path);
    } else {
      throw std::runtime_error(path + ": no such results file or folder");
    }
  }
  std::map<std::string, size_t> by_task;  // sweep task -> index in evaluations
  for (auto& file : r.files) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      json j = json::parse(line, nullptr, false);
      if (!j.is_object() || j.value("schema", "") != "pkb.eval/1" || !j.value("problem", json()).is_string() ||
          !j.value("verdict", json()).is_string()) {
        ++r.bad_lines;
        continue;
      }
      Evaluation e;
      e.problem = j["problem"];
      e.verdict = j["verdict"];
      e.category = j.value("category", json()).is_string() ? j["category"].get<std::string>() : "";
      e.problem_id = j.value("problem_id", json()).is_number_integer() ? j["problem_id"].get<int>() : 0;
      e.world = static_cast<int>(number_at(j, {"run", "world"}).value_or(0));
      e.size = string_at(j, "run", "size", "default");
      e.path = string_at(j, "candidate", "path", "");
      e.backend = string_at(j, "candidate", "backend", "");
      e.run = string_at(j, "sweep", "run", run_of_path(e.path));
      e.sample = static_cast<int>(number_at(j, {"sweep", "sample"}).value_or(0));
      e.key = string_at(j, "sweep", "task", "");
      e.turn = static_cast<int>(number_at(j, {"agent", "turn"}).value_or(0));
      e.speedup = number_at(j, {"speedup"});
      e.timing_in_doubt = eval::timing_in_doubt(j.value("flags", json::array()));
      e.roofline_fraction = number_at(j, {"roofline", "fraction"});
      e.candidate_us = number_at(j, {"timing", "candidate", "median_us"});
      e.reference_us = number_at(j, {"timing", "reference", "median_us"});
      if (!e.key.empty()) {
        // The same evaluation twice (a sweep re-run on a copy of its file): keep the later.
        auto [it, fresh] = by_task.emplace(e.key, r.evaluations.size());
        if (!fresh) {
          ++r.duplicates;
          r.evaluations[it->second] = std::move(e);
          continue;
        }
      }
      r.evaluations.push_back(std::move(e));
    }
  }
  return r;
}

}  // namespace pkb::report
