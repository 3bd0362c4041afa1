#include "rank/job.hpp"

namespace pkb::rank {

namespace {

// One list of fields for both directions. The seed travels as a string: JSON numbers
// above 2^53 lose bits in other readers.
template <class J, class Job>
void fields(J&& visit, Job& j) {
  visit("mode", j.mode);
  visit("rank", j.rank);
  visit("world", j.world);
  visit("device", j.device);
  visit("gpu", j.gpu);
  visit("comm", j.comm);
  visit("spec", j.spec);
  visit("size", j.size);
  visit("dtype", j.dtype);
  visit("reference_libs", j.reference_libs);
  visit("trials", j.trials);
  visit("save_dir", j.save_dir);
  visit("no_comm", j.no_comm);
  visit("heap_bytes", j.heap_bytes);
  visit("barrier_iters", j.barrier_iters);
  visit("library", j.library);
  visit("warmup", j.warmup);
  visit("iters", j.iters);
  visit("timing", j.timing);
  visit("cache", j.cache);
  visit("time_reference", j.time_reference);
  visit("set_budget_bytes", j.set_budget_bytes);
  visit("capture_budget_bytes", j.capture_budget_bytes);
  visit("candidate_heap_bytes", j.candidate_heap_bytes);
  visit("sandbox", j.sandbox);
}

}  // namespace

nlohmann::json to_json(const Job& j) {
  nlohmann::json out;
  fields([&](const char* key, const auto& v) { out[key] = v; }, j);
  out["seed"] = std::to_string(j.seed);
  return out;
}

Job job_from_json(const nlohmann::json& in) {
  Job j;
  fields([&](const char* key, auto& v) {
    if (in.contains(key)) in.at(key).get_to(v);
  }, j);
  if (in.contains("seed")) j.seed = std::stoull(in.at("seed").get<std::string>());
  return j;
}

}  // namespace pkb::rank
