#include "eval/verdict.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <map>
#include <utility>

#include "eval/stats.hpp"
#include "io/text.hpp"
#include "launch/phases.hpp"
#include "rank/job.hpp"

namespace pkb::eval {

using json = nlohmann::json;

namespace {

std::string fmt_us(double us) { return io::format("%.1f", us); }

void set_verdict(json& res, Verdict verdict, const std::string& message) {
  res["verdict"] = verdict_name(verdict);
  res["message"] = message;
}

// A violation found after the calls were timed: no timing is reported.
void violation(json& res, int rank, const std::string& reason, const std::string& message) {
  set_verdict(res, Verdict::integrity_violation, message);
  res["failure"] = {{"rank", rank}, {"phase", "timing"}, {"reason", reason}, {"detail", message}};
  for (auto key : {"timing", "speedup", "speedup_interval", "roofline", "busbw_gbps"}) res[key] = nullptr;
}

// A group that did not finish: timeout, or a rank that died. Returns false when it did.
bool judge_outcome(json& res, const launch::GroupReport& rep) {
  if (rep.outcome == launch::Outcome::Timeout) {
    set_verdict(res, Verdict::timeout, rep.summary);
    return true;
  }
  if (rep.outcome != launch::Outcome::Crash) return false;
  for (auto& rk : rep.ranks) {
    rank::ErrorKind kind = rank::error_kind_from_name(rk.error_kind);
    if (kind == rank::ErrorKind::abi) {
      set_verdict(res, Verdict::compile_error, rk.error_message);
      return true;
    }
    if (kind == rank::ErrorKind::sandbox || rk.signal == SIGSYS) {
      std::string what = kind == rank::ErrorKind::sandbox ? rk.error_message
                                                    : rk.name +
                                                          " was killed by SIGSYS: the candidate made a system call "
                                                          "pkb's sandbox denies and would not let pkb report it";
      set_verdict(res, Verdict::integrity_violation, what);
      res["failure"] = {{"rank", rk.rank}, {"phase", rk.phase}, {"reason", "sandbox"}, {"detail", what}};
      return true;
    }
  }
  set_verdict(res, Verdict::crash, rep.summary);
  return true;
}

// The stage of a candidate rank's phase, in the order pkb's candidate rank runs them; -1 for
// a phase it never announces. Waiting ("sync") keeps the stage it is in.
int stage_of(const std::string& ph) {
  namespace p = launch::phase;
  const std::pair<const char*, int> stages[] = {
      {p::kAwaitReference, 1}, {p::kInit, 2},           {p::kInterpreter, 2},     {p::kCalibration, 2}, {p::kTrial, 3},
      {p::kTimingSetup, 4},    {p::kCandidateWarmup, 5}, {p::kEscapeCheck, 6},     {p::kCandidateTiming, 7},
      {p::kFinish, 8},         {p::kExit, 9}};
  for (auto& [name, st] : stages)
    if (ph == name) return st;
  return ph == p::kSync || ph == p::kAwaitJudge ? 0 : -1;
}

// The channel of each candidate rank: only pkb writes to it, so its store writes stay in its
// namespace and its phases follow pkb's order. Returns the violation's message, or "".
std::string channel_error(const launch::RankReport& rk) {
  if (!rk.refused_key.empty())
    return rk.name + " wrote to pkb's store outside its own keys ('" + rk.refused_key +
           "'): something other than pkb wrote to the rank's channel to the parent";
  if (rk.results > 1)
    return rk.name + " sent " + std::to_string(rk.results) +
           " results where pkb's rank sends one: something other than pkb wrote to its channel";
  std::string e = phase_order_error(rk.history);
  return e.empty() ? "" : rk.name + "'s phase events " + e + ": something other than pkb wrote to its channel";
}

void judge_escape(json& res, const std::vector<CandidateReport>& cands, const Rules& rules, json& flags) {
  for (size_t r = 0; r < cands.size(); ++r) {
    if (!cands[r].escape) continue;
    const EscapeCheck& x = *cands[r].escape;
    double h = stats_of(x.host_us).median, e = stats_of(x.event_us).median, base = stats_of(x.baseline_host_us).median;
    res["escape_check"] = {{"calls", x.calls}, {"host_us", h}, {"event_us", e}, {"baseline_us", base}, {"capture", x.capture}};
    std::string how;
    if (x.capture == "unjoined")
      how = "pkb_run forks work off ctx->stream and never joins it back (a captured call leaves an unjoined fork)";
    else if (h - e - base > std::max(rules.escape_min_us, rules.escape_fraction * e))
      how = std::to_string(x.calls) + " calls take " + fmt_us(h) + " us of device-synchronised host time but " +
            fmt_us(e) + " us on the stream pkb times";
    if (how.empty()) continue;
    violation(res, static_cast<int>(r), "timing_escape",
              "work escapes the timed stream on rank " + std::to_string(r) + ": " + how +
                  "; run everything on ctx->stream, or join every stream you fork back to it before returning");
    flags.push_back("timing_escape");
    return;
  }
}

}  // namespace

int verdict_exit_code(Verdict v) {
  switch (v) {
    case Verdict::correct: return kOk;
    case Verdict::wrong: return kWrong;
    case Verdict::compile_error: return kCompileError;
    case Verdict::crash: return kCrash;
    case Verdict::timeout: return kTimeout;
    case Verdict::integrity_violation: return kIntegrity;
  }
  return kInternal;
}

int verdict_exit_code(const std::string& verdict) {
  try {
    return verdict_exit_code(verdict_from_name(verdict));
  } catch (const std::invalid_argument&) {
    return kInternal;
  }
}

std::string exit_code_verdict(int code) {
  for (Verdict v : {Verdict::correct, Verdict::wrong, Verdict::compile_error, Verdict::crash, Verdict::timeout,
                    Verdict::integrity_violation})
    if (verdict_exit_code(v) == code) return verdict_name(v);
  return "";
}

std::string phase_order_error(const std::vector<launch::RankReport::Step>& history) {
  int stage = 0, trial = -1;
  std::string last = "the start";
  for (auto& step : history) {
    int st = stage_of(step.phase);
    if (st < 0) return "name a phase pkb never announces ('" + step.phase + "')";
    if (st > 0 && st < stage) return "went back to " + step.phase + " after " + last;
    if (st == 3 || (st == 0 && stage == 3)) {
      if (step.trial < trial) return "went back to trial " + std::to_string(step.trial) + " after trial " + std::to_string(trial);
      trial = step.trial;
    }
    if (st > 0) stage = st;
    last = launch::phase_label(step.phase, step.trial);
  }
  return "";
}

// The calls' cycles and instructions, where counted: their medians, the core's clock while
// a call ran (cycles over its CPU time) and instructions per cycle. Null where not counted.
static json counters_summary(const HostUse& h) {
  if (h.call_cycles.empty() || h.call_cycles.size() != h.call_instructions.size()) return nullptr;
  std::vector<double> ghz, ipc;
  for (size_t i = 0; i < h.call_cycles.size(); ++i) {
    if (i < h.enqueue_cpu_us.size() && h.enqueue_cpu_us[i] > 0) ghz.push_back(h.call_cycles[i] / h.enqueue_cpu_us[i] / 1e3);
    if (h.call_cycles[i] > 0) ipc.push_back(h.call_instructions[i] / h.call_cycles[i]);
  }
  return {{"cycles_median", stats_of(h.call_cycles).median},
          {"instructions_median", stats_of(h.call_instructions).median},
          {"ghz_median", ghz.empty() ? json() : json(stats_of(ghz).median)},
          {"ipc_median", ipc.empty() ? json() : json(stats_of(ipc).median)}};
}

// A side's host during its timed loop (HostUse), summed up: the median time a call took to
// return, the share of the loop the timing thread and the whole process ran on a CPU
// (process: in cores), its context switches, and the machine's busy share.
static json host_summary(const CallTimes& t) {
  const HostUse& h = *t.host;
  double wall = std::max(t.loop_us, 1.0);
  return {{"enqueue_median_us", stats_of(h.enqueue_us).median},
          {"enqueue_cpu_median_us", stats_of(h.enqueue_cpu_us).median},
          {"call_switches", h.call_switches},
          {"thread_cpu_share", h.thread_cpu_us / wall},
          {"process_cpu_cores", h.process_cpu_us / wall},
          {"switches_voluntary", h.switches_voluntary},
          {"switches_involuntary", h.switches_involuntary},
          {"machine_busy", h.machine_busy},
          {"call_minor_faults", static_cast<double>(h.call_minor_faults) / std::max<size_t>(h.enqueue_us.size(), 1)},
          {"call_major_faults", h.call_major_faults},
          {"probe", to_json(h.probe)},
          {"cpu", h.cpu},
          {"call_counters", counters_summary(h)},
          {"thp_anon_kib", h.thp_anon_kib},
          {"thp_file_kib", h.thp_file_kib},
          {"gate_median_us", h.gate_us.empty() ? json() : json(stats_of(h.gate_us).median)},
          {"copy_median_us", h.copy_us.empty() ? json() : json(stats_of(h.copy_us).median)},
          {"ops", h.ops.empty() ? json() : ops_json(h.ops)},
          {"enqueue_mean_us", h.ops.empty() ? json() : json(stats_of(h.enqueue_us).mean)}};  // the ops' base
}

// Why the two sides' hosts, rather than their code, may set a speedup (flag host_mismatch),
// or "". A launch-bound call (its host at least rules.launch_bound_fraction of its time)
// runs at its host's speed, which on the lent H200 (a VM) moves up to ~2x: mostly the
// whole machine, from one period to the next (bench/results/h200-2026-12-04, call 7), so
// the two sides, timed at different times, can meet different hosts. Two readings, each a
// fixed ATen op timed on a timing thread (the host probe, op_us):
// - the judges' own probe at the candidate's time (before its warm-up and after its timed
//   calls, on the CPU the reference was timed on; taken outside the candidate's process)
//   against the reference's: the machine moved between the two timings;
// - else the candidate rank's probe against the reference's: the two processes differ.
// Either over rules.host_mismatch apart, where the slower side's calls are launch-bound.
static std::string host_mismatch(const json& host, double ref_us, double cand_us, const Rules& rules,
                                  const char* judges = "judges") {
  auto probe = [&](const char* side) { return host.value(side, json::object()).value("probe", json::object()).value("op_us", -1.0); };
  auto enqueue = [&](const char* side) { return host.value(side, json::object()).value("enqueue_median_us", 0.0); };
  auto launch_bound = [&](bool cand_side) {
    return enqueue(cand_side ? "candidate" : "reference") >= rules.launch_bound_fraction * (cand_side ? cand_us : ref_us);
  };
  double ref = probe("reference");
  if (ref <= 0) return "";
  char buf[400];
  // The machine as the judges saw it at the candidate's time: its slowest reading (the
  // slower state, where either side of the candidate's calls shows it).
  double hi = 0;
  for (auto& p : host.value("judge_at_candidate", json::array())) hi = std::max(hi, p.value("op_us", -1.0));
  if (hi > 0) {
    if (hi > rules.host_mismatch * ref && launch_bound(true)) {
      std::snprintf(buf, sizeof buf,
                    "the machine's host ran %.2fx slower at the candidate's timing than at the reference's (the judges' "
                    "own probe %.2f against %.2f us) and the candidate's calls are launch-bound (host %.1f us a call for "
                    "%.1f us): the speedup follows the machine",
                    hi / ref, hi, ref, enqueue("candidate"), cand_us);
      return buf;
    }
    if (ref > rules.host_mismatch * hi && launch_bound(false)) {
      std::snprintf(buf, sizeof buf,
                    "the machine's host ran %.2fx slower at the reference's timing than at the candidate's (the %s' "
                    "probe %.2f against %.2f us at the candidate's time) and the reference's calls are launch-bound "
                    "(host %.1f us a call for %.1f us): the speedup follows the machine",
                    ref / hi, judges, ref, hi, enqueue("reference"), ref_us);
      return buf;
    }
  }
  double cand = probe("candidate");
  if (cand <= 0) return "";
  bool cand_slower = cand > ref;
  double ratio = cand_slower ? cand / ref : ref / cand;
  if (ratio <= rules.host_mismatch || !launch_bound(cand_slower)) return "";
  std::string who = cand_slower ? std::string("the candidate rank's process") : "the process of the " + std::string(judges);
  std::snprintf(buf, sizeof buf,
                "%s ran the host probe %.2fx slower (%.2f against %.2f us) and its calls are "
                "launch-bound (host %.1f us a call for %.1f us): the speedup follows the processes",
                who.c_str(), ratio, cand_slower ? cand : ref, cand_slower ? ref : cand,
                enqueue(cand_slower ? "candidate" : "reference"), cand_slower ? cand_us : ref_us);
  return buf;
}

json JudgedReference::cache() const {
  if (!stable) return nullptr;
  return {{"stats", stats.to_json()}, {"counts", counts}, {"peak_bytes", peak_bytes}, {"samples", calls},
          {"attempts", attempts}, {"host", host}};
}

JudgedReference judged_reference(const std::vector<JudgeReport>& judges) {
  JudgedReference out;
  const int kept = judges.at(0).reference_kept;
  out.attempts = json::array();
  for (size_t a = 0; a < judges[0].reference.size(); ++a) {
    std::vector<std::vector<double>> per_rank;
    for (auto& j : judges) per_rank.push_back(j.reference.at(a).times.us);
    std::vector<double> calls = slowest_per_call(per_rank);
    Stats st = stats_of(calls);
    // Each judge's CPU for the attempt and its host per call: a disturbed attempt shows
    // whether its judge's host was slow, and where.
    json cpus = json::array(), host_us = json::array();
    for (auto& j : judges) {
      const auto& h = j.reference.at(a).times.host;
      cpus.push_back(h ? h->cpu : -1);
      host_us.push_back(h ? json(stats_of(h->enqueue_us).median) : json());
    }
    out.attempts.push_back({{"median_us", st.median}, {"iqr_us", st.iqr},
                            {"clocks", to_json(judges[0].reference.at(a).clocks)}, {"cpus", cpus},
                            {"host_median_us", host_us}});
    if (static_cast<int>(a) == kept) {
      out.stats = st;
      out.calls = calls;
    }
  }
  out.stable = judges[0].reference_stable;
  out.unstable = judges[0].reference_unstable;
  for (auto& j : judges) out.peak_bytes = std::max(out.peak_bytes, j.reference_peak_bytes);
  out.counts = {{"warmup", judges[0].reference.at(kept).times.warmup}, {"iters", out.calls.size()}};
  if (judges[0].reference.at(kept).times.host) out.host = host_summary(judges[0].reference.at(kept).times);
  return out;
}

json judge(json& res, const launch::GroupReport& rep, const Context& c, const Rules& rules) {
  json flags = json::array();
  if (rep.leftovers_ended > 0) flags.push_back("left_processes");
  res["flags"] = flags;
  const int w = c.world;
  // A candidate rank that spoke out of turn: whatever else happened, that is the verdict.
  for (int r = 0; r < w && static_cast<int>(rep.ranks.size()) == 2 * w; ++r) {
    std::string e = channel_error(rep.ranks[w + r]);
    if (e.empty()) continue;
    set_verdict(res, Verdict::integrity_violation, e);
    res["failure"] = {{"rank", r}, {"phase", rep.ranks[w + r].phase}, {"reason", "channel"}, {"detail", e}};
    return nullptr;
  }
  if (judge_outcome(res, rep)) return nullptr;

  std::vector<JudgeReport> judges;
  std::vector<CandidateReport> cands;
  for (int p = 0; p < 2 * w; ++p) {
    json j = json::parse(rep.ranks.at(p).result, nullptr, false);
    try {
      if (p < w) judges.push_back(judge_report_from_json(j));
      else cands.push_back(candidate_report_from_json(j));
    } catch (const std::exception& e) {
      if (p < w) throw std::runtime_error(rep.ranks[p].name + " sent a malformed report: " + e.what());
      std::string m = rep.ranks[p].name + "'s report is not pkb's (" + e.what() +
                      "): something other than pkb wrote to the rank's channel";
      set_verdict(res, Verdict::integrity_violation, m);
      res["failure"] = {{"rank", p - w}, {"phase", "finish"}, {"reason", "channel"}, {"detail", m}};
      return nullptr;
    }
  }
  res["phases_ms"] = {{"judge", judges[0].phase_ms}, {"candidate", cands[0].phase_ms}};
  if (!cands[0].sandbox.is_null()) res["sandbox"] = cands[0].sandbox;
  // Every judge agreed on the first failure (they all-gather it).
  if (judges[0].failure) {
    const Failure& f = *judges[0].failure;
    std::string where = "rank " + std::to_string(f.rank) +
                        (f.output.empty() ? "" : (f.reason == "input_mutated" ? ", input '" : ", output '") + f.output + "'") +
                        (f.phase == "trial" ? ", trial " + std::to_string(f.trial) : ", during timing");
    set_verdict(res, f.verdict, where + ": " + f.detail);
    res["failure"] = f.to_json();
    return nullptr;
  }
  // The candidate ranks were in as many trials as the judges ran.
  for (int r = 0; r < w; ++r) {
    int seen = -1;
    for (auto& st : rep.ranks[w + r].history)
      if (st.phase == launch::phase::kTrial) seen = std::max(seen, st.trial);
    if (seen + 1 != judges[0].trials_run) {
      std::string m = rep.ranks[w + r].name + " announced " + std::to_string(seen + 1) + " trials where its judge ran " +
                      std::to_string(judges[0].trials_run) + ": something other than pkb wrote to its channel";
      set_verdict(res, Verdict::integrity_violation, m);
      res["failure"] = {{"rank", r}, {"phase", "trial"}, {"reason", "channel"}, {"detail", m}};
      return nullptr;
    }
  }
  set_verdict(res, Verdict::correct, std::to_string(judges[0].trials_run) + " trials on " + std::to_string(w) + " ranks" +
                                         (c.timing ? ", " + std::to_string(judges[0].timed_calls_checked) +
                                                         " timed calls checked"
                                                   : ""));
  res["run"]["trials_run"] = judges[0].trials_run;
  // Outputs passed with elements outside atol/rtol that the spec's mismatch allows: said.
  int tolerated = 0;
  int64_t most = 0;
  for (auto& j : judges) {
    tolerated += j.tolerated_outputs;
    most = std::max(most, j.tolerated_max);
  }
  if (tolerated > 0) {
    res["mismatch_tolerated"] = {{"outputs", tolerated}, {"max_elements", most}};
    res["message"] = res["message"].get<std::string>() + "; " + std::to_string(tolerated) +
                     " outputs (over ranks and calls) had up to " + std::to_string(most) +
                     " elements outside atol/rtol, within the spec's mismatch allowance";
  }
  if (!c.timing) return nullptr;

  // The candidate's calls by its judge's clock (CUDA); on the CPU device the rank's own.
  std::vector<std::vector<double>> cand, self, ref;
  for (auto& x : cands) self.push_back(x.timing ? x.timing->us : std::vector<double>{});
  for (auto& j : judges)
    if (j.candidate) cand.push_back(j.candidate->us);
  if (!c.mps && c.device == launch::Device::cuda) {
    cand.clear();  // the judge's spans hold the other context's time slices
    flags.push_back("timing_unverified");
  }
  const bool judge_clock = !cand.empty();
  if (!judge_clock) cand = self;
  std::vector<double> cand_calls = slowest_per_call(cand);
  Stats cs = stats_of(cand_calls);
  // The reference: the attempt the judges kept, or the cache's (or an earlier start's).
  json to_cache, ref_counts, attempts, ref_host;
  std::vector<double> ref_calls;
  Stats rs;
  bool ref_stable = true;
  if (judges[0].reference.empty()) {
    rs = Stats::from_json(c.cached_reference.at("stats"));
    ref_counts = c.cached_reference.at("counts");
    ref_calls = c.cached_reference.value("samples", std::vector<double>{});
    if (c.reference_timed_here) {
      attempts = c.cached_reference.value("attempts", json());
      ref_host = c.cached_reference.value("host", json());
    }
  } else {
    JudgedReference t = judged_reference(judges);
    rs = t.stats;
    ref_calls = t.calls;
    ref_counts = t.counts;
    attempts = t.attempts;
    ref_stable = t.stable;
    ref_host = t.host;
    // Only a stable baseline is kept for later evaluations: a disturbed one would inflate
    // every speedup measured against it.
    if (!c.profiled) to_cache = t.cache();
  }
  if (c.profiled) flags.push_back("profiled");
  res["timing"] = {{"reference", rs.to_json()}, {"candidate", cs.to_json()},
                   {"reference_cached", judges[0].reference.empty() && !c.reference_timed_here},
                   {"clock", judge_clock ? "judge" : "candidate_rank"}};
  if (attempts.is_array() && !attempts.empty()) res["timing"]["reference_attempts"] = attempts;
  if (!c.reference_redraws.empty()) res["timing"]["reference_redraws"] = c.reference_redraws;
  // Where a launch-bound call's time goes: each side's host, rank 0's (diagnostic only).
  json host;
  if (!ref_host.is_null()) host["reference"] = ref_host;
  if (cands[0].timing && cands[0].timing->host) {
    host["candidate"] = host_summary(*cands[0].timing);
    if (judges[0].machine_busy >= 0) host["candidate"]["machine_busy"] = judges[0].machine_busy;
  }
  if (!judges[0].probes_at_candidate.empty()) {
    host["judge_at_candidate"] = json::array();
    for (auto& p : judges[0].probes_at_candidate) host["judge_at_candidate"].push_back(to_json(p));
  }
  if (!host.is_null()) res["timing"]["host"] = host;
  if (judge_clock) {
    res["timing"]["candidate_self"] = stats_of(slowest_per_call(self)).to_json();
    if (judges[0].gate) {
      res["timing"]["gate_overhead"] = to_json(*judges[0].gate);
      if (judges[0].gate->noisy()) flags.push_back("noisy_gate");
    }
  }
  if (judge_clock && host.contains("candidate")) {
    // Against the host of the judges that timed the baseline: this run's, or a cached
    // timing's (kept with its host), which is what the speedup divides by all the same.
    json sides = host;
    const char* judges = "judges";
    if (!sides.contains("reference") && c.cached_reference.is_object() && c.cached_reference.contains("host")) {
      sides["reference"] = c.cached_reference["host"];
      judges = "judges of the cached reference timing";
    }
    std::string why = host_mismatch(sides, rs.median, cs.median, rules, judges);
    if (!why.empty()) {
      flags.push_back("host_mismatch");
      res["timing"]["host_mismatch"] = why;
    }
  }
  if (!ref_stable) {
    flags.push_back("noisy_reference");
    res["timing"]["reference_unstable"] = judges[0].reference_unstable;
  }
  res["run"]["counts"] = {{"candidate", {{"warmup", cands[0].timing ? cands[0].timing->warmup : 0},
                                         {"iters", cs.samples},
                                         {"captured", judges[0].captured_calls}}},
                          {"reference", ref_counts}};
  res["speedup"] = cs.median > 0 ? rs.median / cs.median : 0;
  if (!ref_calls.empty() && !cand_calls.empty()) res["speedup_interval"] = speedup_interval(ref_calls, cand_calls).to_json();
  const spec::ProblemSpec& s = *c.spec;
  if (!s.roofline.bus_factor.empty())
    res["busbw_gbps"] = {{"reference", busbw_gbps(s, c.size, c.world, c.dtype, rs.median)},
                         {"candidate", busbw_gbps(s, c.size, c.world, c.dtype, cs.median)}};
  for (auto& j : judges)
    if (j.clocks && j.clocks->throttled) {
      flags.push_back("throttled");
      break;
    }
  if (c.ranks_per_gpu > 1) flags.push_back("shared_gpu");
  if (!judges[0].device_copy.is_null()) res["device_copy"] = judges[0].device_copy;
  if (judges[0].clocks)
    res["clocks"] = {{"sm_mhz_before", judges[0].clocks->sm_mhz_before}, {"sm_mhz_after", judges[0].clocks->sm_mhz_after},
                     {"max_sm_mhz", judges[0].clocks->max_sm_mhz}, {"throttled", judges[0].clocks->throttled}};

  if (c.hardware) {
    Bound b = roofline_bound(s, c.size, c.world, c.dtype, *c.hardware);
    if (b.us > 0) {
      res["roofline"] = {{"bound_us", b.us}, {"fraction", b.us / cs.median}, {"limiter", b.limiter},
                         {"nvlink_us", b.nvlink_us}, {"hbm_us", b.hbm_us}, {"flops_us", b.flops_us}};
      // Below the speed of light is a cheat or a wrong formula, never a result. Ranks that
      // share a GPU are no measurement of either.
      if (cs.median < rules.roofline_floor * b.us && c.ranks_per_gpu == 1) {
        flags.push_back("faster_than_roofline");
        json timing = res["timing"];  // the judge's clock, not forged: kept for whoever looks into it
        violation(res, 0, "faster_than_roofline",
                  "the candidate's median " + fmt_us(cs.median) + " us is under " + fmt_us(100 * rules.roofline_floor) +
                      "% of the roofline bound " + fmt_us(b.us) + " us (" + b.limiter + ", hardware profile " +
                      c.hardware->name + "): faster than the hardware allows, so work was skipped or done "
                      "elsewhere (or the problem's roofline formula is wrong, a bug to report)");
        res["failure"]["timing"] = timing;
      }
    }
  }
  // The candidate rank's own reading against its judge's clock: far below it, the times
  // were rewritten in the candidate's process (the judge's are the ones used either way).
  if (res["verdict"] == "correct" && judge_clock) {
    for (int r = 0; r < w && res["verdict"] == "correct"; ++r) {
      if (!cands[r].timing || static_cast<size_t>(r) >= judges.size() || !judges[r].candidate) continue;
      double own = stats_of(cands[r].timing->us).median, judged = stats_of(judges[r].candidate->us).median;
      if (own < rules.self_report_fraction * judged && judged - own > rules.self_report_min_us) {
        flags.push_back("timing_unverified");
        violation(res, r, "timing_report",
                  "rank " + std::to_string(r) + "'s own events say its calls took a median " + fmt_us(own) +
                      " us, but its judge's clock saw " + fmt_us(judged) +
                      " us: the times were rewritten inside the candidate's process");
      }
    }
  }
  if (res["verdict"] == "correct") judge_escape(res, cands, rules, flags);
  res["flags"] = flags;
  return to_cache;
}

bool timing_in_doubt(const json& flags) {
  for (auto& f : flags)
    if (f == "throttled" || f == "shared_gpu" || f == "left_processes" || f == "faster_than_roofline" ||
        f == "timing_escape" || f == "timing_unverified" || f == "noisy_reference" || f == "noisy_gate" ||
        f == "host_mismatch" || f == "profiled")
      return true;
  return false;
}

bool timing_counts(const json& r) {
  if (r.value("verdict", "") != "correct" || !r.value("speedup", json()).is_number()) return false;
  const json& run = r.value("run", json::object());
  if (run.value("device", "") != "cuda" || run.value("ranks_per_gpu", 1) != 1) return false;
  return !timing_in_doubt(r.value("flags", json::array()));
}

}  // namespace pkb::eval
