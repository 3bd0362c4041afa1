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

std::vector<OpHost> ops_from_json(const json& a) {
  std::vector<OpHost> ops;
  for (auto& o : a) ops.push_back({o.at("name"), o.at("calls"), o.at("us"), o.at("nested")});
  return ops;
}

CallTimes call_times_from_json(const json& j) {
  CallTimes t;
  t.us = j.at("us").get<std::vector<double>>();
  t.warmup = j.at("warmup");
  t.loop_us = j.at("loop_us");
  if (j.contains("host") && !j["host"].is_null()) {
    const json& h = j["host"];
    HostUse u{h.at("enqueue_us").get<std::vector<double>>(), h.at("enqueue_cpu_us").get<std::vector<double>>(),
              h.at("call_switches"),           h.at("thread_cpu_us"),
              h.at("process_cpu_us"),          h.at("switches_voluntary"),
              h.at("switches_involuntary"),    h.at("machine_busy")};
    // Reference timings cached before the probe existed have none of these.
    u.call_minor_faults = h.value("call_minor_faults", 0L);
    u.call_major_faults = h.value("call_major_faults", 0L);
    u.cpu = h.value("cpu", -1);
    if (h.contains("probe")) u.probe = host_probe_from_json(h["probe"]);
    u.call_cycles = h.value("call_cycles", std::vector<double>{});
    u.call_instructions = h.value("call_instructions", std::vector<double>{});
    u.gate_us = h.value("gate_us", std::vector<double>{});
    u.copy_us = h.value("copy_us", std::vector<double>{});
    u.thp_anon_kib = h.value("thp_anon_kib", -1L);
    u.thp_file_kib = h.value("thp_file_kib", -1L);
    if (h.contains("ops")) u.ops = ops_from_json(h["ops"]);
    t.host = u;
  }
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

HostProbe host_probe_from_json(const json& p) {
  return HostProbe{p.value("cpu_us", -1.0), p.value("launch_us", -1.0), p.value("op_us", -1.0),
                   p.value("alloc_us", -1.0), p.value("cpu_ghz", -1.0), p.value("mem_ns", -1.0)};
}

json to_json(const HostProbe& p) {
  return {{"cpu_us", p.cpu_us}, {"launch_us", p.launch_us}, {"op_us", p.op_us}, {"alloc_us", p.alloc_us}, {"cpu_ghz", p.cpu_ghz}, {"mem_ns", p.mem_ns}};
}

json ops_json(const std::vector<OpHost>& ops) {
  json a = json::array();
  for (auto& o : ops) a.push_back({{"name", o.name}, {"calls", o.calls}, {"us", o.us}, {"nested", o.nested}});
  return a;
}

json to_json(const HostUse& h) {
  return {{"enqueue_us", h.enqueue_us},
          {"enqueue_cpu_us", h.enqueue_cpu_us},
          {"call_switches", h.call_switches},
          {"thread_cpu_us", h.thread_cpu_us},
          {"process_cpu_us", h.process_cpu_us},
          {"switches_voluntary", h.switches_voluntary},
          {"switches_involuntary", h.switches_involuntary},
          {"machine_busy", h.machine_busy},
          {"call_minor_faults", h.call_minor_faults},
          {"call_major_faults", h.call_major_faults},
          {"probe", to_json(h.probe)},
          {"cpu", h.cpu},
          {"call_cycles", h.call_cycles},
          {"call_instructions", h.call_instructions},
          {"thp_anon_kib", h.thp_anon_kib},
          {"thp_file_kib", h.thp_file_kib},
          {"gate_us", h.gate_us},
          {"copy_us", h.copy_us},
          {"ops", ops_json(h.ops)}};
}

json to_json(const CallTimes& t) {
  return {{"us", t.us}, {"warmup", t.warmup}, {"loop_us", t.loop_us}, {"host", optional_json(t.host)}};
}

json to_json(const Clocks& c) {
  return {{"sm_mhz_before", c.sm_mhz_before}, {"sm_mhz_after", c.sm_mhz_after}, {"max_sm_mhz", c.max_sm_mhz},
          {"throttle_reasons", c.throttle_reasons}, {"throttled", c.throttled}};
}

static json probes_json(const std::vector<HostProbe>& probes) {
  json a = json::array();
  for (auto& p : probes) a.push_back(to_json(p));
  return a;
}

json to_json(const JudgeReport& r) {
  json attempts = json::array();
  for (auto& a : r.reference) attempts.push_back({{"times", to_json(a.times)}, {"clocks", to_json(a.clocks)}});
  return {{"role", "judge"},
          {"failure", optional_json(r.failure)},
          {"trials_run", r.trials_run},
          {"timed_calls_checked", r.timed_calls_checked},
          {"captured_calls", r.captured_calls},
          {"tolerated", {{"outputs", r.tolerated_outputs}, {"max_elements", r.tolerated_max}}},
          {"reference", attempts},
          {"reference_kept", r.reference_kept},
          {"reference_stable", r.reference_stable},
          {"reference_unstable", r.reference_unstable},
          {"reference_peak_bytes", r.reference_peak_bytes},
          {"candidate", optional_json(r.candidate)},
          {"gate", optional_json(r.gate)},
          {"clocks", optional_json(r.clocks)},
          {"machine_busy", r.machine_busy},
          {"probes_at_candidate", probes_json(r.probes_at_candidate)},
          {"device_copy", r.device_copy},
          {"phase_ms", r.phase_ms}};
}

json to_json(const CandidateReport& r) {
  return {{"role", "candidate"},
          {"timing", optional_json(r.timing)},
          {"escape", optional_json(r.escape)},
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
  for (auto& a : j.at("reference")) r.reference.push_back({call_times_from_json(a.at("times")), clocks_from_json(a.at("clocks"))});
  r.reference_kept = j.at("reference_kept");
  r.reference_stable = j.at("reference_stable");
  r.reference_unstable = j.at("reference_unstable");
  r.reference_peak_bytes = j.value("reference_peak_bytes", 0.0);
  if (!j.at("candidate").is_null()) r.candidate = call_times_from_json(j["candidate"]);
  if (!j.at("gate").is_null()) {
    const json& g = j["gate"];
    r.gate = GateOverhead{g.at("median_us"), g.at("iqr_us"), g.at("calls"), g.at("taken_us")};
  }
  if (!j.at("clocks").is_null()) r.clocks = clocks_from_json(j["clocks"]);
  r.machine_busy = j.value("machine_busy", -1.0);
  for (auto& p : j.value("probes_at_candidate", json::array())) r.probes_at_candidate.push_back(host_probe_from_json(p));
  r.device_copy = j.at("device_copy");
  r.phase_ms = j.value("phase_ms", json::object());
  return r;
}

CandidateReport candidate_report_from_json(const json& j) {
  if (j.at("role") != "candidate") throw std::invalid_argument("not a candidate rank's report");
  CandidateReport r;
  if (!j.at("timing").is_null()) r.timing = call_times_from_json(j["timing"]);
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
  r.sandbox = j.at("sandbox");
  r.phase_ms = j.value("phase_ms", json::object());
  return r;
}

}  // namespace pkb::eval
