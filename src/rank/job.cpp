#include "rank/job.hpp"

#include <stdexcept>
#include <utility>

namespace pkb::rank {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Job::EvalProblem, captures, candidate_heap_bytes, judge_paces)

namespace {

const std::pair<Role, const char*> kRoles[] = {
    {Role::single, "single"}, {Role::judge, "judge"}, {Role::candidate, "candidate"}};

Role role_from_name(const std::string& name) {
  for (auto& [r, n] : kRoles)
    if (name == n) return r;
  throw std::invalid_argument("no rank role called '" + name + "'");
}

// One list of fields for both directions (the settings' own: rank/settings.hpp). The seed
// travels as a string: JSON numbers above 2^53 lose bits in other readers.
template <class J, class Job>
void fields(J&& visit, Job& j) {
  visit("mode", j.mode);
  visit("rank", j.rank);
  visit("world", j.world);
  visit("gpu", j.gpu);
  visit("timing_cpu", j.timing_cpu);
  visit("partner_cpu", j.partner_cpu);
  visit("specs", j.specs);
  visit("reference_libs", j.reference_libs);
  visit("save_dir", j.save_dir);
  visit("save_by_problem", j.save_by_problem);
  visit("no_comm", j.no_comm);
  visit("heap_bytes", j.heap_bytes);
  visit("barrier_iters", j.barrier_iters);
  visit("library", j.library);
  visit("sandbox", j.sandbox);
  visit("eval_problems", j.eval_problems);
}

}  // namespace

const char* error_kind_name(ErrorKind k) {
  return k == ErrorKind::abi ? "abi" : k == ErrorKind::sandbox ? "sandbox" : "error";
}

ErrorKind error_kind_from_name(const std::string& name) {
  return name == "abi" ? ErrorKind::abi : name == "sandbox" ? ErrorKind::sandbox : ErrorKind::error;
}

const char* role_name(Role r) {
  for (auto& [x, n] : kRoles)
    if (x == r) return n;
  return "?";
}

nlohmann::json to_json(const Job& j) {
  nlohmann::json out;
  out["settings"] = to_json(static_cast<const EvalSettings&>(j));
  fields([&](const char* key, const auto& v) { out[key] = v; }, j);
  out["role"] = role_name(j.role);
  out["device"] = launch::name(j.device);
  out["comm"] = launch::name(j.comm);
  out["seed"] = std::to_string(j.seed);
  return out;
}

Job job_from_json(const nlohmann::json& in) {
  Job j;
  if (in.contains("settings")) static_cast<EvalSettings&>(j) = settings_from_json(in.at("settings"));
  fields([&](const char* key, auto& v) {
    if (in.contains(key)) in.at(key).get_to(v);
  }, j);
  if (in.contains("role")) j.role = role_from_name(in.at("role").get<std::string>());
  if (in.contains("device")) j.device = launch::device_from_name(in.at("device").get<std::string>());
  if (in.contains("comm")) j.comm = launch::comm_from_name(in.at("comm").get<std::string>());
  if (in.contains("seed")) j.seed = std::stoull(in.at("seed").get<std::string>());
  return j;
}

}  // namespace pkb::rank
