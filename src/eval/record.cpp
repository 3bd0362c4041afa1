#include "eval/record.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace pkb::eval {

using json = nlohmann::json;

namespace {

const char kSchema[] = "pkb.eval/1";

// An optional field: written when it holds a value, read when the key is there and not null.
template <class T>
void put(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}
template <class T>
void get(const json& j, const char* key, std::optional<T>& v) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) v = it->get<T>();
}
void put(json& j, const char* key, const std::string& s) {
  if (!s.empty()) j[key] = s;
}
std::string text(const json& j, const char* key, const std::string& fallback = "") {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}
json field(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? json() : *it;
}
// What is left of `j` once the typed keys are taken.
json rest_of(const json& j, std::initializer_list<const char*> typed) {
  json r = j.is_object() ? j : json::object();
  for (auto k : typed) r.erase(k);
  return r;
}
// `rest` first, then the typed keys over it.
json with_rest(const json& rest, json typed) {
  json j = rest.is_object() ? rest : json::object();
  j.update(typed);
  return j;
}

// One side's statistics; older records may lack the quartiles (about the median when the
// IQR is there; `quartiles` false when neither is) or more.
std::optional<Stats> stats_at(const json& j, const char* key, bool* quartiles = nullptr) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_object()) return std::nullopt;
  const json& x = *it;
  if (quartiles && !(x.contains("p25_us") && x.contains("p75_us")) && !x.contains("iqr_us")) *quartiles = false;
  Stats s;
  s.median = x.value("median_us", 0.0);
  s.mean = x.value("mean_us", s.median);
  s.min = x.value("min_us", s.median);
  s.max = x.value("max_us", s.median);
  s.iqr = x.value("iqr_us", 0.0);
  s.p25 = x.value("p25_us", s.median - s.iqr / 2);
  s.p75 = x.value("p75_us", s.median + s.iqr / 2);
  s.samples = x.value("samples", 0);
  return s;
}

// ---- the parts -----------------------------------------------------------------------------

json candidate_json(const CandidateFile& c) {
  json j = {{"path", c.path}, {"sha256", c.sha256}, {"backend", c.backend}};
  put(j, "abs_path", c.abs_path);
  return j;
}
CandidateFile candidate_from_json(const json& j) {
  return {text(j, "path"), text(j, "abs_path"), text(j, "sha256"), text(j, "backend")};
}

json counts_json(const CallCounts& c) {
  return {{"candidate", {{"warmup", c.candidate_warmup}, {"iters", c.candidate_iters}, {"captured", c.captured}}},
          {"reference",
           {{"warmup", c.reference_warmup}, {"iters", c.reference_iters}, {"baseline", c.baseline},
            {"baseline_warmup", c.baseline_warmup}}}};
}
CallCounts counts_from_json(const json& j) {
  const json c = field(j, "candidate"), r = field(j, "reference");
  auto num = [](const json& side, const char* key) { return side.is_object() ? side.value(key, 0) : 0; };
  return {num(c, "warmup"), num(c, "iters"),    num(c, "captured"),       num(r, "warmup"),
          num(r, "iters"),  num(r, "baseline"), num(r, "baseline_warmup")};
}

const std::initializer_list<const char*> kRunKeys = {
    "world", "ranks_per_gpu", "device", "size", "dtype", "gpu", "comm", "hardware_profile", "cache", "ranks_started", "fork_server_failed", "seed", "gpus",
    "trials", "warmup", "iters", "trials_run", "leftovers_ended", "sandbox", "mps", "counts", "cpus", "budgets_s",
    "settings", "memory_plan"};

json run_json(const RunInfo& r) {
  json j = {{"world", r.world}, {"ranks_per_gpu", r.ranks_per_gpu}, {"device", r.device}, {"size", r.size},
            {"seed", r.seed.empty() ? json() : json(r.seed)}};
  put(j, "dtype", r.dtype);
  put(j, "gpu", r.gpu);
  put(j, "comm", r.comm);
  put(j, "hardware_profile", r.hardware_profile);
  put(j, "cache", r.cache);
  put(j, "ranks_started", r.ranks_started);
  put(j, "fork_server_failed", r.fork_server_failed);
  put(j, "gpus", r.gpus);
  put(j, "trials", r.trials);
  put(j, "warmup", r.warmup);
  put(j, "iters", r.iters);
  put(j, "trials_run", r.trials_run);
  put(j, "leftovers_ended", r.leftovers_ended);
  put(j, "sandbox", r.sandbox);
  put(j, "mps", r.mps);
  if (r.counts) j["counts"] = counts_json(*r.counts);
  for (auto [key, v] : {std::pair<const char*, const json*>{"cpus", &r.cpus}, {"budgets_s", &r.budgets_s},
                        {"settings", &r.settings}, {"memory_plan", &r.memory_plan}})
    if (!v->is_null()) j[key] = *v;
  return with_rest(r.rest, j);
}
RunInfo run_from_json(const json& j) {
  RunInfo r;
  if (!j.is_object()) return r;
  r.world = j.value("world", 0);
  r.ranks_per_gpu = j.value("ranks_per_gpu", 1);
  r.device = text(j, "device");
  r.size = text(j, "size", "default");
  r.dtype = text(j, "dtype");
  r.gpu = text(j, "gpu");
  r.comm = text(j, "comm");
  r.hardware_profile = text(j, "hardware_profile");
  r.cache = text(j, "cache");
  r.ranks_started = text(j, "ranks_started");
  r.fork_server_failed = text(j, "fork_server_failed");
  const json seed = field(j, "seed");  // a decimal string; a number in hand-written records
  r.seed = seed.is_string() ? seed.get<std::string>() : seed.is_number() ? seed.dump() : "";
  get(j, "gpus", r.gpus);
  get(j, "trials", r.trials);
  get(j, "warmup", r.warmup);
  get(j, "iters", r.iters);
  get(j, "trials_run", r.trials_run);
  get(j, "leftovers_ended", r.leftovers_ended);
  get(j, "sandbox", r.sandbox);
  get(j, "mps", r.mps);
  if (field(j, "counts").is_object()) r.counts = counts_from_json(j["counts"]);
  r.cpus = field(j, "cpus");
  r.budgets_s = field(j, "budgets_s");
  r.settings = field(j, "settings");
  r.memory_plan = field(j, "memory_plan");
  r.rest = rest_of(j, kRunKeys);
  return r;
}

// A record's failure: pkb's judged ones carry every field; a compile error's and older
// records' may not (the record's verdict stands in for a missing one).
Failure failure_from_record(const json& j, std::optional<Verdict> verdict) {
  Failure f;
  std::string v = text(j, "verdict");
  f.verdict = !v.empty() ? verdict_from_name(v) : verdict.value_or(Verdict::wrong);
  f.phase = text(j, "phase");
  f.trial = j.value("trial", int64_t{-1});
  f.rank = j.value("rank", -1);
  f.output = text(j, "output");
  f.reason = text(j, "reason");
  f.detail = text(j, "detail");
  json m = rest_of(j, {"verdict", "phase", "trial", "rank", "output", "reason", "detail"});
  if (!m.empty()) f.mismatch = m;
  return f;
}

json rounds_json(const RoundsSummary& r) {
  json medians = json::array();
  for (auto& m : r.medians_us) medians.push_back({m[0], m[1]});
  return {{"count", r.count},   {"block", r.block},   {"stop", r.stop},
          {"seconds", r.seconds}, {"target", r.target}, {"estimate", r.estimate.to_json()},
          {"medians_us", medians}};
}
RoundsSummary rounds_from_json(const json& j) {
  RoundsSummary r;
  r.count = j.value("count", 0);
  r.block = j.value("block", 0);
  r.stop = text(j, "stop");
  r.seconds = j.value("seconds", 0.0);
  r.target = j.value("target", 0.0);
  const json e = field(j, "estimate");
  if (e.is_object()) {
    r.estimate.speedup = e.value("speedup", 0.0);
    r.estimate.lo = e.value("lo", 0.0);
    r.estimate.hi = e.value("hi", 0.0);
    r.estimate.rounds = e.value("rounds", 0);
    const json hw = field(e, "half_width");
    r.estimate.half_width = hw.is_number() ? hw.get<double>() : std::numeric_limits<double>::infinity();
  }
  for (auto& m : field(j, "medians_us").is_array() ? j["medians_us"] : json::array())
    r.medians_us.push_back({m.at(0).get<double>(), m.at(1).get<double>()});
  return r;
}

const std::initializer_list<const char*> kTimingKeys = {
    "reference", "candidate",      "baseline",       "clock",        "rounds",
    "reference_slowed", "copy_median_us", "candidate_self", "gate_overhead", "machine", "host", "candidate_beside"};

json timing_json(const TimingSummary& t) {
  json j = {{"reference", t.reference.to_json()},
            {"candidate", t.candidate.to_json()},
            {"baseline", t.baseline.to_json()},
            {"clock", t.clock}};
  if (t.rounds) j["rounds"] = rounds_json(*t.rounds);
  put(j, "reference_slowed", t.reference_slowed);
  put(j, "copy_median_us", t.copy_median_us);
  if (t.candidate_self) j["candidate_self"] = t.candidate_self->to_json();
  if (t.gate_overhead) j["gate_overhead"] = eval::to_json(*t.gate_overhead);
  if (t.machine) {
    j["machine"] = {{"baseline", t.machine->baseline.to_json()}, {"rounds", t.machine->rounds.to_json()},
                    {"credited", t.machine->credited}};
    for (auto [key, probe] : {std::pair{"probe_baseline", &t.machine->probe_baseline},
                              {"probe_after_reference", &t.machine->probe_after_reference},
                              {"probe_after_candidate", &t.machine->probe_after_candidate}})
      if (*probe) j["machine"][key] = (*probe)->to_json();
  }
  if (t.host_reference && t.host_candidate)
    j["host"] = {{"reference", eval::to_json(*t.host_reference)}, {"candidate", eval::to_json(*t.host_candidate)}};
  put(j, "candidate_beside", t.candidate_beside);
  return with_rest(t.rest, j);
}
TimingSummary timing_summary_from_json(const json& j) {
  TimingSummary t;
  t.reference = stats_at(j, "reference", &t.quartiles).value_or(Stats{});
  t.candidate = stats_at(j, "candidate", &t.quartiles).value_or(Stats{});
  t.baseline = stats_at(j, "baseline").value_or(Stats{});
  t.clock = text(j, "clock");
  if (field(j, "rounds").is_object()) t.rounds = rounds_from_json(j["rounds"]);
  t.reference_slowed = text(j, "reference_slowed");
  get(j, "copy_median_us", t.copy_median_us);
  t.candidate_self = stats_at(j, "candidate_self");
  const json g = field(j, "gate_overhead");
  if (g.is_object())
    t.gate_overhead = GateOverhead{g.value("median_us", 0.0), g.value("iqr_us", 0.0), g.value("calls", 0),
                                   g.value("taken_us", 0.0)};
  const json m = field(j, "machine");
  if (m.is_object())
    t.machine = MachinePace{stats_at(m, "baseline").value_or(Stats{}), stats_at(m, "rounds").value_or(Stats{}),
                            m.value("credited", 1.0), stats_at(m, "probe_baseline"),
                            stats_at(m, "probe_after_reference"), stats_at(m, "probe_after_candidate")};
  const json h = field(j, "host");
  if (h.is_object() && h.contains("reference") && h.contains("candidate")) {
    t.host_reference = host_share_from_json(h["reference"]);
    t.host_candidate = host_share_from_json(h["candidate"]);
  }
  t.candidate_beside = text(j, "candidate_beside");
  t.rest = rest_of(j, kTimingKeys);
  return t;
}

const std::initializer_list<const char*> kRecordKeys = {
    "schema",     "problem",  "problem_id", "category", "time",    "candidate", "run",   "versions",
    "verdict",    "message",  "failure",    "timing",   "speedup", "speedup_interval",   "busbw_gbps",
    "roofline",   "flags",    "mismatch_tolerated",     "escape_check",        "clocks", "wall_s",
    "build_s",    "costs_s",  "phases_ms",  "sandbox",  "sweep",   "agent",     "slurm"};

}  // namespace

bool Record::has_flag(const std::string& f) const { return std::find(flags.begin(), flags.end(), f) != flags.end(); }

json Record::to_json() const {
  json j = {{"schema", kSchema},
            {"problem", problem},
            {"problem_id", problem_id},
            {"category", category},
            {"candidate", candidate_json(candidate)},
            {"run", run_json(run)},
            {"versions", versions},
            {"verdict", verdict ? verdict_name(*verdict) : ""},
            {"message", message},
            {"failure", failure ? failure->to_json() : json()},
            {"timing", timing ? timing_json(*timing) : json()},
            {"speedup", speedup ? json(*speedup) : json()},
            {"busbw_gbps", busbw_gbps ? json{{"reference", busbw_gbps->reference_gbps},
                                             {"candidate", busbw_gbps->candidate_gbps}}
                                      : json()},
            {"roofline", roofline ? json{{"bound_us", roofline->bound_us},
                                         {"fraction", roofline->fraction},
                                         {"limiter", roofline->limiter},
                                         {"nvlink_us", roofline->nvlink_us},
                                         {"hbm_us", roofline->hbm_us},
                                         {"flops_us", roofline->flops_us}}
                                  : json()},
            {"flags", flags}};
  put(j, "time", time);
  if (speedup_interval)
    j["speedup_interval"] = {{"lo", speedup_interval->lo}, {"hi", speedup_interval->hi},
                             {"level", speedup_interval->level}, {"method", speedup_interval->method}};
  if (mismatch_tolerated)
    j["mismatch_tolerated"] = {{"outputs", mismatch_tolerated->outputs}, {"max_elements", mismatch_tolerated->max_elements}};
  if (escape_check)
    j["escape_check"] = {{"calls", escape_check->calls},       {"host_us", escape_check->host_us},
                         {"event_us", escape_check->event_us}, {"baseline_us", escape_check->baseline_us},
                         {"capture", escape_check->capture}};
  if (clocks) j["clocks"] = eval::to_json(*clocks);
  put(j, "wall_s", wall_s);
  put(j, "build_s", build_s);
  for (auto [key, v] : {std::pair<const char*, const json*>{"costs_s", &costs_s}, {"phases_ms", &phases_ms},
                        {"sandbox", &sandbox}})
    if (!v->is_null()) j[key] = *v;
  if (sweep) {
    j["sweep"] = {{"run", sweep->run}, {"sample", sweep->sample}, {"task", sweep->task}};
    put(j["sweep"], "parallel", sweep->parallel);
    put(j["sweep"], "batch", sweep->batch);
  }
  if (agent)
    j["agent"] = {{"model", agent->model}, {"turn", agent->turn}, {"tokens", agent->tokens}, {"wall_s", agent->wall_s}};
  if (slurm) j["slurm"] = {{"job", slurm->job}, {"folder", slurm->folder}};
  return with_rest(rest, j);
}

bool Record::is_record(const json& j) {
  return j.is_object() && j.value("schema", json()) == kSchema && j.value("problem", json()).is_string() &&
         j.value("verdict", json()).is_string();
}

Record Record::from_json(const json& j) {
  if (!is_record(j))
    throw std::invalid_argument("not a pkb.eval/1 record (its schema, a problem and a verdict string)");
  Record r;
  r.problem = j["problem"];
  r.category = text(j, "category");
  r.problem_id = field(j, "problem_id").is_number_integer() ? j["problem_id"].get<int>() : 0;
  r.time = text(j, "time");
  r.candidate = candidate_from_json(field(j, "candidate"));
  r.run = run_from_json(field(j, "run"));
  r.versions = field(j, "versions");
  const std::string v = j["verdict"];
  if (!v.empty()) r.verdict = verdict_from_name(v);
  r.message = text(j, "message");
  if (field(j, "failure").is_object()) r.failure = failure_from_record(j["failure"], r.verdict);
  if (field(j, "timing").is_object()) r.timing = timing_summary_from_json(j["timing"]);
  if (field(j, "speedup").is_number()) r.speedup = j["speedup"].get<double>();
  const json ci = field(j, "speedup_interval");
  if (ci.is_object() && ci.value("lo", json()).is_number() && ci.value("hi", json()).is_number())
    r.speedup_interval = Interval{ci["lo"], ci["hi"], ci.value("level", 0.95), text(ci, "method", "rounds")};
  const json bw = field(j, "busbw_gbps");
  if (bw.is_object()) r.busbw_gbps = BusBandwidth{bw.value("reference", 0.0), bw.value("candidate", 0.0)};
  const json roof = field(j, "roofline");
  if (roof.is_object())
    r.roofline = Roofline{roof.value("bound_us", 0.0), roof.value("fraction", 0.0), text(roof, "limiter"),
                          roof.value("nvlink_us", 0.0), roof.value("hbm_us", 0.0), roof.value("flops_us", 0.0)};
  for (auto& f : field(j, "flags").is_array() ? j["flags"] : json::array())
    if (f.is_string()) r.flags.push_back(f);
  const json tol = field(j, "mismatch_tolerated");
  if (tol.is_object()) r.mismatch_tolerated = Tolerated{tol.value("outputs", 0), tol.value("max_elements", int64_t{0})};
  const json esc = field(j, "escape_check");
  if (esc.is_object())
    r.escape_check = EscapeSummary{esc.value("calls", 0), esc.value("host_us", 0.0), esc.value("event_us", 0.0),
                                   esc.value("baseline_us", 0.0), text(esc, "capture")};
  const json clk = field(j, "clocks");
  if (clk.is_object())
    r.clocks = Clocks{clk.value("sm_mhz_before", 0), clk.value("sm_mhz_after", 0), clk.value("max_sm_mhz", 0),
                      clk.value("throttle_reasons", 0ULL), clk.value("throttled", false)};
  get(j, "wall_s", r.wall_s);
  get(j, "build_s", r.build_s);
  r.costs_s = field(j, "costs_s");
  r.phases_ms = field(j, "phases_ms");
  r.sandbox = field(j, "sandbox");
  const json sw = field(j, "sweep");
  if (sw.is_object()) {
    r.sweep = SweepTag{text(sw, "run"), text(sw, "task"), sw.value("sample", 0), std::nullopt, std::nullopt};
    get(sw, "parallel", r.sweep->parallel);
    get(sw, "batch", r.sweep->batch);
  }
  const json ag = field(j, "agent");
  if (ag.is_object())
    r.agent = AgentTag{text(ag, "model"), ag.value("turn", 0), ag.value("tokens", int64_t{0}), ag.value("wall_s", 0.0)};
  const json sl = field(j, "slurm");
  if (sl.is_object()) r.slurm = SlurmTag{text(sl, "job"), text(sl, "folder")};
  r.rest = rest_of(j, kRecordKeys);
  return r;
}

Record unmeasured_record(Record r, Verdict verdict, const std::string& message, const std::string& flag, double wall_s) {
  r.set_verdict(verdict, message);
  r.flags = {flag};
  r.wall_s = wall_s;
  return r;
}

bool timing_in_doubt(const std::vector<std::string>& flags) {
  for (auto& f : flags)
    if (f == "throttled" || f == "shared_gpu" || f == "left_processes" || f == "faster_than_roofline" ||
        f == "timing_escape" || f == "timing_unverified" || f == "noisy_timing" || f == "noisy_gate" ||
        // older records' (before the timed rounds): a reference timing in doubt, hosts apart
        f == "noisy_reference" || f == "host_mismatch" || f == "profiled")
      return true;
  return false;
}

bool timing_counts(const Record& r) {
  if (!r.correct() || !r.speedup) return false;
  if (r.run.device != "cuda" || r.run.ranks_per_gpu != 1) return false;
  return !timing_in_doubt(r.flags);
}

}  // namespace pkb::eval
