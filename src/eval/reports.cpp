#include "eval/reports.hpp"

#include <stdexcept>
#include <utility>

namespace pkb::eval {

using json = nlohmann::json;

json to_json(const GateOverhead& g) {
  return {{"median_us", g.median_us}, {"iqr_us", g.iqr_us}, {"calls", g.calls}, {"taken_us", g.taken_us}};
}

namespace {

const std::pair<Verdict, const char*> kVerdictNames[] = {
    {Verdict::correct, "correct"}, {Verdict::wrong, "wrong"},     {Verdict::compile_error, "compile_error"},
    {Verdict::crash, "crash"},     {Verdict::timeout, "timeout"}, {Verdict::integrity_violation, "integrity_violation"},
};

json to_json(const Failure& f) { return f.to_json(); }

json to_json(const EscapeCheck& e) {
  return {{"calls", e.calls}, {"host_us", e.host_us}, {"event_us", e.event_us},
          {"baseline_host_us", e.baseline_host_us}, {"capture", e.capture}};
}

template <class T>
json optional_json(const std::optional<T>& x) {
  return x ? to_json(*x) : json();
}

Clocks clocks_from_json(const json& c) {
  Clocks x;
  x.sm_mhz_before = c.at("sm_mhz_before");
  x.sm_mhz_after = c.at("sm_mhz_after");
  x.max_sm_mhz = c.at("max_sm_mhz");
  x.throttle_reasons = c.at("throttle_reasons");
  x.throttled = c.at("throttled");
  return x;
}

CallTimes call_times_from_json(const json& j) {
  CallTimes t;
  t.us = j.at("us").get<std::vector<double>>();
  t.warmup = j.at("warmup");
  return t;
}

}  // namespace

const char* verdict_name(Verdict v) {
  for (auto& [x, name] : kVerdictNames)
    if (x == v) return name;
  return "?";
}

Verdict verdict_from_name(const std::string& name) {
  for (auto& [x, n] : kVerdictNames)
    if (name == n) return x;
  throw std::invalid_argument("no verdict called '" + name + "'");
}

json Failure::to_json() const {
  json j = {{"verdict", verdict_name(verdict)}, {"phase", phase},   {"trial", trial},  {"rank", rank},
            {"output", output},                 {"reason", reason}, {"detail", detail}};
  if (mismatch.is_object()) j.update(mismatch);
  return j;
}

Failure Failure::of(Verdict v, std::string phase, std::string reason, std::string detail) {
  Failure f;
  f.verdict = v;
  f.phase = std::move(phase);
  f.reason = std::move(reason);
  f.detail = std::move(detail);
  return f;
}

Failure Failure::from_json(const json& j) {
  Failure f;
  f.verdict = verdict_from_name(j.at("verdict"));
  f.phase = j.at("phase");
  f.trial = j.at("trial");
  f.rank = j.at("rank");
  f.output = j.at("output");
  f.reason = j.at("reason");
  f.detail = j.at("detail");
  json m = j;
  for (auto k : {"verdict", "phase", "trial", "rank", "output", "reason", "detail"}) m.erase(k);
  if (!m.empty()) f.mismatch = m;
  return f;
}

json to_json(const CallTimes& t) { return {{"us", t.us}, {"warmup", t.warmup}}; }

json to_json(const Clocks& c) {
  return {{"sm_mhz_before", c.sm_mhz_before}, {"sm_mhz_after", c.sm_mhz_after}, {"max_sm_mhz", c.max_sm_mhz},
          {"throttle_reasons", c.throttle_reasons}, {"throttled", c.throttled}};
}

static json to_json(const interleave::Round& r) {
  return {{"reference_us", r.reference_us}, {"candidate_us", r.candidate_us}, {"judge_us", r.judge_us},
          {"probe_us", r.probe_us}};
}

json to_json(const HostShare& h) {
  return {{"wall_ms", h.wall_ms},   {"main_run_ms", h.main_run_ms}, {"main_wait_ms", h.main_wait_ms},
          {"pkb_run_ms", h.pkb_run_ms}, {"new_threads_run_ms", h.new_threads_run_ms}};
}

HostShare host_share_from_json(const json& j) {
  HostShare h;
  h.wall_ms = j.value("wall_ms", 0.0);
  h.main_run_ms = j.value("main_run_ms", 0.0);
  h.main_wait_ms = j.value("main_wait_ms", 0.0);
  h.pkb_run_ms = j.value("pkb_run_ms", 0.0);
  h.new_threads_run_ms = j.value("new_threads_run_ms", 0.0);
  return h;
}

json to_json(const Timing& t) {
  json rounds = json::array();
  for (auto& r : t.rounds) rounds.push_back(to_json(r));
  return {{"baseline", to_json(t.baseline)},
          {"judge_baseline_us", t.judge_baseline_us},
          {"probe_baseline_us", t.probe_baseline_us},
          {"host", {{"reference", to_json(t.host_reference)}, {"candidate", to_json(t.host_candidate)}}},
          {"rounds", rounds},
          {"plan", {{"block", t.plan.block}, {"min_rounds", t.plan.min_rounds}, {"max_rounds", t.plan.max_rounds}}},
          {"stop", t.stop},
          {"warmup", {{"reference", t.reference_warmup}, {"candidate", t.candidate_warmup}}},
          {"seconds", t.seconds}};
}

Timing timing_from_json(const json& j) {
  Timing t;
  t.baseline = call_times_from_json(j.at("baseline"));
  t.judge_baseline_us = j.at("judge_baseline_us").get<std::vector<double>>();
  for (auto& r : j.at("rounds"))
    t.rounds.push_back({r.at("reference_us").get<std::vector<double>>(), r.at("candidate_us").get<std::vector<double>>(),
                        r.at("judge_us").get<std::vector<double>>(), r.at("probe_us").get<std::vector<double>>()});
  t.probe_baseline_us = j.at("probe_baseline_us").get<std::vector<double>>();
  t.host_reference = host_share_from_json(j.at("host").at("reference"));
  t.host_candidate = host_share_from_json(j.at("host").at("candidate"));
  const json& p = j.at("plan");
  t.plan = {p.at("block"), p.at("min_rounds"), p.at("max_rounds")};
  t.stop = j.at("stop");
  t.reference_warmup = j.at("warmup").at("reference");
  t.candidate_warmup = j.at("warmup").at("candidate");
  t.seconds = j.at("seconds");
  return t;
}

json to_json(const JudgeReport& r) {
  return {{"role", "judge"},
          {"failure", optional_json(r.failure)},
          {"trials_run", r.trials_run},
          {"timed_calls_checked", r.timed_calls_checked},
          {"captured_calls", r.captured_calls},
          {"tolerated", {{"outputs", r.tolerated_outputs}, {"max_elements", r.tolerated_max}}},
          {"timing", optional_json(r.timing)},
          {"candidate", optional_json(r.candidate)},
          {"gate", optional_json(r.gate)},
          {"clocks", optional_json(r.clocks)},
          {"phase_ms", r.phase_ms}};
}

json to_json(const CandidateReport& r) {
  return {{"role", "candidate"},
          {"timing", optional_json(r.timing)},
          {"copy_us", r.copy_us},
          {"escape", optional_json(r.escape)},
          {"state_changed", r.state_changed},
          {"sandbox", r.sandbox},
          {"phase_ms", r.phase_ms}};
}

JudgeReport judge_report_from_json(const json& j) {
  if (j.at("role") != "judge") throw std::invalid_argument("not a judge's report");
  JudgeReport r;
  if (!j.at("failure").is_null()) r.failure = Failure::from_json(j["failure"]);
  r.trials_run = j.at("trials_run");
  r.timed_calls_checked = j.at("timed_calls_checked");
  r.captured_calls = j.at("captured_calls");
  r.tolerated_outputs = j.at("tolerated").at("outputs");
  r.tolerated_max = j.at("tolerated").at("max_elements");
  if (!j.at("timing").is_null()) r.timing = timing_from_json(j["timing"]);
  if (!j.at("candidate").is_null()) r.candidate = call_times_from_json(j["candidate"]);
  if (!j.at("gate").is_null()) {
    const json& g = j["gate"];
    r.gate = GateOverhead{g.at("median_us"), g.at("iqr_us"), g.at("calls"), g.at("taken_us")};
  }
  if (!j.at("clocks").is_null()) r.clocks = clocks_from_json(j["clocks"]);
  r.phase_ms = j.value("phase_ms", json::object());
  return r;
}

CandidateReport candidate_report_from_json(const json& j) {
  if (j.at("role") != "candidate") throw std::invalid_argument("not a candidate rank's report");
  CandidateReport r;
  if (!j.at("timing").is_null()) r.timing = call_times_from_json(j["timing"]);
  r.copy_us = j.value("copy_us", std::vector<double>{});
  if (!j.at("escape").is_null()) {
    const json& e = j["escape"];
    EscapeCheck x;
    x.calls = e.at("calls");
    x.host_us = e.at("host_us").get<std::vector<double>>();
    x.event_us = e.at("event_us").get<std::vector<double>>();
    x.baseline_host_us = e.at("baseline_host_us").get<std::vector<double>>();
    x.capture = e.at("capture");
    r.escape = x;
  }
  r.state_changed = j.value("state_changed", "");
  r.sandbox = j.at("sandbox");
  r.phase_ms = j.value("phase_ms", json::object());
  return r;
}

}  // namespace pkb::eval
