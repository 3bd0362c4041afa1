#include "eval/verdict.hpp"

#include <algorithm>
#include <array>
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

// A failure of the candidate rank's channel or of the group, in `phase`.
void fail(Record& res, Verdict v, int rank, const std::string& phase, const std::string& reason,
          const std::string& message) {
  res.set_verdict(v, message);
  res.failure = Failure::of(v, phase, reason, message);
  res.failure->rank = rank;
}

// A violation found after the calls were timed: no timing is reported.
void violation(Record& res, int rank, const std::string& reason, const std::string& message) {
  fail(res, Verdict::integrity_violation, rank, "timing", reason, message);
  res.timing.reset();
  res.speedup.reset();
  res.speedup_interval.reset();
  res.roofline.reset();
  res.busbw_gbps.reset();
}


// A group that did not finish: timeout, or a rank that died. Returns false when it did.
bool judge_outcome(Record& res, const launch::GroupReport& rep) {
  if (rep.outcome == launch::Outcome::Timeout) {
    res.set_verdict(Verdict::timeout, rep.summary);
    return true;
  }
  if (rep.outcome != launch::Outcome::Crash) return false;
  for (auto& rk : rep.ranks) {
    rank::ErrorKind kind = rank::error_kind_from_name(rk.error_kind);
    if (kind == rank::ErrorKind::abi) {
      res.set_verdict(Verdict::compile_error, rk.error_message);
      return true;
    }
    if (kind == rank::ErrorKind::sandbox || rk.signal == SIGSYS) {
      std::string what = kind == rank::ErrorKind::sandbox ? rk.error_message
                                                    : rk.name +
                                                          " was killed by SIGSYS: the candidate made a system call "
                                                          "pkb's sandbox denies and would not let pkb report it";
      fail(res, Verdict::integrity_violation, rk.rank, rk.phase, "sandbox", what);
      return true;
    }
  }
  res.set_verdict(Verdict::crash, rep.summary);
  return true;
}

// The stage of a candidate rank's phase, in the order pkb's candidate rank runs them; -1 for
// a phase it never announces. Waiting ("sync") keeps the stage it is in.
int stage_of(const std::string& ph) {
  namespace p = launch::phase;
  const std::pair<const char*, int> stages[] = {
      {p::kInit, 2},           {p::kInterpreter, 2},     {p::kCalibration, 2}, {p::kReferenceWarmup, 2},
      {p::kReferenceTiming, 2}, {p::kTrial, 3},
      {p::kTimingSetup, 4},    {p::kCandidateWarmup, 5}, {p::kCandidateTiming, 6},  {p::kEscapeCheck, 7},
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

// Each round's two medians, [reference, candidate] (us): where the rounds' ratios come from.
std::vector<std::array<double, 2>> round_medians(const std::vector<interleave::Round>& rounds) {
  std::vector<std::array<double, 2>> a;
  for (auto& r : rounds) a.push_back({stats_of(r.reference_us).median, stats_of(r.candidate_us).median});
  return a;
}

void judge_escape(Record& res, const std::vector<CandidateReport>& cands, const Rules& rules) {
  for (size_t r = 0; r < cands.size(); ++r) {
    if (!cands[r].escape) continue;
    const EscapeCheck& x = *cands[r].escape;
    double h = stats_of(x.host_us).median, e = stats_of(x.event_us).median, base = stats_of(x.baseline_host_us).median;
    res.escape_check = EscapeSummary{x.calls, h, e, base, x.capture};
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
    res.flags.push_back("timing_escape");
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

void judge(Record& res, const launch::GroupReport& rep, const Context& c, const Rules& rules) {
  res.flags.clear();
  if (rep.leftovers_ended > 0) res.flags.push_back("left_processes");
  const int w = c.world;
  // A candidate rank that spoke out of turn: whatever else happened, that is the verdict.
  for (int r = 0; r < w && static_cast<int>(rep.ranks.size()) == 2 * w; ++r) {
    std::string e = channel_error(rep.ranks[w + r]);
    if (e.empty()) continue;
    fail(res, Verdict::integrity_violation, r, rep.ranks[w + r].phase, "channel", e);
    return;
  }
  if (judge_outcome(res, rep)) return;

  std::vector<JudgeReport> judges;
  std::vector<CandidateReport> cands;
  for (int p = 0; p < 2 * w; ++p) {
    json j = json::parse(rep.ranks.at(p).result, nullptr, false);
    try {
      if (p < w) judges.push_back(judge_report_from_json(j));
      else cands.push_back(candidate_report_from_json(j));
    } catch (const std::exception& e) {
      if (p < w) throw std::runtime_error(rep.ranks[p].name + " sent a malformed report: " + e.what());
      fail(res, Verdict::integrity_violation, p - w, "finish", "channel",
           rep.ranks[p].name + "'s report is not pkb's (" + e.what() +
               "): something other than pkb wrote to the rank's channel");
      return;
    }
  }
  res.phases_ms = {{"judge", judges[0].phase_ms}, {"candidate", cands[0].phase_ms}};
  if (!cands[0].sandbox.is_null()) res.sandbox = cands[0].sandbox;
  // Every judge agreed on the first failure (they all-gather it).
  if (judges[0].failure) {
    const Failure& f = *judges[0].failure;
    std::string where = "rank " + std::to_string(f.rank) +
                        (f.output.empty() ? "" : (f.reason == "input_mutated" ? ", input '" : ", output '") + f.output + "'") +
                        (f.phase == "trial" ? ", trial " + std::to_string(f.trial) : ", during timing");
    res.set_verdict(f.verdict, where + ": " + f.detail);
    res.failure = f;
    return;
  }
  // The candidate ranks were in as many trials as the judges ran.
  for (int r = 0; r < w; ++r) {
    int seen = -1;
    for (auto& st : rep.ranks[w + r].history)
      if (st.phase == launch::phase::kTrial) seen = std::max(seen, st.trial);
    if (seen + 1 != judges[0].trials_run) {
      fail(res, Verdict::integrity_violation, r, "trial", "channel",
           rep.ranks[w + r].name + " announced " + std::to_string(seen + 1) + " trials where its judge ran " +
               std::to_string(judges[0].trials_run) + ": something other than pkb wrote to its channel");
      return;
    }
  }
  res.set_verdict(Verdict::correct, std::to_string(judges[0].trials_run) + " trials on " + std::to_string(w) + " ranks" +
                                        (c.timing ? ", " + std::to_string(judges[0].timed_calls_checked) +
                                                        " timed calls checked"
                                                  : ""));
  res.run.trials_run = judges[0].trials_run;
  // Outputs passed with elements outside atol/rtol that the spec's mismatch allows: said.
  Tolerated tolerated;
  for (auto& j : judges) {
    tolerated.outputs += j.tolerated_outputs;
    tolerated.max_elements = std::max(tolerated.max_elements, j.tolerated_max);
  }
  if (tolerated.outputs > 0) {
    res.mismatch_tolerated = tolerated;
    res.message += "; " + std::to_string(tolerated.outputs) + " outputs (over ranks and calls) had up to " +
                   std::to_string(tolerated.max_elements) + " elements outside atol/rtol, within the spec's mismatch allowance";
  }
  if (!c.timing) return;
  if (!judges[0].timing) throw std::runtime_error("the judges reported no timing of a timed evaluation");

  // Both sides' calls in the rounds, by the judges' clock (CUDA), else the candidate rank's
  // own (the CPU device), each at the slowest rank; every judge agreed on them.
  const Timing& t = *judges[0].timing;
  std::vector<double> ref_calls, cand_calls;
  for (auto& r : t.rounds) {
    ref_calls.insert(ref_calls.end(), r.reference_us.begin(), r.reference_us.end());
    cand_calls.insert(cand_calls.end(), r.candidate_us.begin(), r.candidate_us.end());
  }
  const bool judge_clock = c.device == launch::Device::cuda;
  if (judge_clock && !c.mps) res.flags.push_back("timing_unverified");  // the judge's spans hold the other context's slices
  TimingSummary ts;
  ts.reference = stats_of(ref_calls);
  ts.candidate = stats_of(cand_calls);
  ts.baseline = stats_of(t.baseline.us);
  ts.clock = judge_clock ? "judge" : "candidate_rank";
  const double gate_us = judge_clock && judges[0].gate ? judges[0].gate->iqr_us : 0.0;
  interleave::Estimate e = interleave::estimate(t.rounds, gate_us);
  ts.rounds = RoundsSummary{e.rounds, t.plan.block, t.stop, t.seconds, c.interval_target, e, round_medians(t.rounds)};
  const Stats &rs = ts.reference, &cs = ts.candidate;
  // The reference is credited at most a little over its baseline, and the machine's own
  // drift (the judges' reference, in processes no candidate code enters): timed beside the
  // candidate, in the candidate's process, it is within the candidate's reach.
  // The judges' measurements kept where they were made (0: not measured, the candidate rank
  // could not be held still).
  auto measured = [](std::vector<double>& into, const std::vector<double>& xs) {
    for (double x : xs)
      if (x > 0) into.push_back(x);
  };
  std::vector<double> paces, before;
  for (auto& r : t.rounds) measured(paces, r.judge_us);
  measured(before, t.judge_baseline_us);
  if (!paces.empty() && !before.empty()) ts.machine = MachinePace{stats_of(before), stats_of(paces), 1.0};
  // What of the candidate was seen beside the reference's calls: its threads on the CPU
  // (the most any judge's candidate rank showed), work it left on the GPU (the judges' device
  // probe after the reference's blocks: rounds C R end on them, R C on the candidate's).
  std::vector<double> probes_before, after_reference, after_candidate;
  measured(probes_before, t.probe_baseline_us);
  for (size_t k = 0; k < t.rounds.size(); ++k) measured(k % 2 == 0 ? after_reference : after_candidate, t.rounds[k].probe_us);
  if (ts.machine && !probes_before.empty()) {
    ts.machine->probe_baseline = stats_of(probes_before);
    if (!after_reference.empty()) ts.machine->probe_after_reference = stats_of(after_reference);
    if (!after_candidate.empty()) ts.machine->probe_after_candidate = stats_of(after_candidate);
  }
  if (t.host_reference.wall_ms > 0) {
    ts.host_reference = t.host_reference;
    ts.host_candidate = t.host_candidate;
  }
  double probe_rounds = 0;  // the slower of the probes after either side's blocks
  if (ts.machine)
    for (auto* x : {&ts.machine->probe_after_reference, &ts.machine->probe_after_candidate})
      if (*x) probe_rounds = std::max(probe_rounds, (*x)->median);
  std::string state;  // what a candidate rank found changed, the first that did
  for (auto& x : cands)
    if (state.empty() && !x.state_changed.empty()) state = x.state_changed;
  interleave::Beside seen = interleave::beside(
      t.host_reference.new_threads_share(), ts.machine && ts.machine->probe_baseline ? ts.machine->probe_baseline->median : 0.0,
      probe_rounds, state);
  if (seen.threads)
    ts.candidate_beside = "threads of the candidate's own ran " + io::format("%.1f", 100 * seen.thread_share) +
                          "% of the time the reference's calls did, on the CPU they were made on";
  auto also = [&](const std::string& what) { ts.candidate_beside += (ts.candidate_beside.empty() ? "" : "; ") + what; };
  if (seen.device)
    also("the judges' device probe ran " + io::format("%.1f", 100 * seen.probe_slower) +
         "% slower at the rounds' ends than beside the baseline (work the candidate left on the GPU)");
  if (!seen.state.empty()) also("the candidate changed what the reference runs under (" + seen.state + ")");
  interleave::Paces p{ts.baseline.median, rs.median, ts.machine ? ts.machine->baseline.median : 0.0,
                      ts.machine ? ts.machine->rounds.median : 0.0};
  interleave::Cap cap = interleave::cap(p, c.reference_drift, c.machine_drift, seen.any());
  if (ts.machine) ts.machine->credited = cap.machine;
  if (cap.applied()) {
    res.flags.push_back("reference_slowed");
    std::string machine =
        ts.machine ? ", times the machine's own slow-down " + io::format("%.3f", cap.machine) + " (the judges' reference: " +
                         fmt_us(ts.machine->rounds.median) + " us against " + fmt_us(ts.machine->baseline.median) +
                         " us, credited up to " + io::format("%.0f", 100 * c.machine_drift) + "% slower)"
                   : "";
    ts.reference_slowed =
        "the reference ran " + io::format("%.1f", 100 * cap.slower) + "% slower beside the candidate (median " +
        fmt_us(rs.median) + " us) than alone before the candidate was loaded (" + fmt_us(ts.baseline.median) +
        " us); credited at most " + io::format("%.0f", 100 * c.reference_drift) + "% over its baseline" + machine +
        ", the speedup is " + io::format("%.3f", cap.factor) + " of the rounds', since " + ts.candidate_beside;
  }
  if (e.rounds >= 2 && e.half_width > rules.max_interval) res.flags.push_back("noisy_timing");
  if (!cands[0].copy_us.empty()) ts.copy_median_us = stats_of(cands[0].copy_us).median;
  if (judge_clock && judges[0].gate) {
    std::vector<std::vector<double>> self;
    for (auto& x : cands) self.push_back(x.timing ? x.timing->us : std::vector<double>{});
    ts.candidate_self = stats_of(slowest_per_call(self));
    ts.gate_overhead = *judges[0].gate;
  }
  res.run.counts = CallCounts{t.candidate_warmup, cs.samples,  judges[0].captured_calls, t.reference_warmup,
                              rs.samples,         ts.baseline.samples, t.baseline.warmup};
  res.timing = ts;
  res.speedup = e.speedup * cap.factor;
  res.speedup_interval = Interval{e.lo * cap.factor, e.hi * cap.factor, 0.95, "rounds"};
  const spec::ProblemSpec& s = *c.spec;
  if (!s.roofline.bus_factor.empty())
    res.busbw_gbps = BusBandwidth{busbw_gbps(s, c.size, c.world, c.dtype, rs.median),
                                  busbw_gbps(s, c.size, c.world, c.dtype, cs.median)};
  for (auto& j : judges)
    if (j.clocks && j.clocks->throttled) {
      res.flags.push_back("throttled");
      break;
    }
  if (c.ranks_per_gpu > 1) res.flags.push_back("shared_gpu");
  if (judges[0].clocks) res.clocks = *judges[0].clocks;

  if (c.hardware) {
    Bound b = roofline_bound(s, c.size, c.world, c.dtype, *c.hardware);
    if (b.us > 0) {
      res.roofline = Roofline{b.us, b.us / cs.median, b.limiter, b.nvlink_us, b.hbm_us, b.flops_us};
      // Below the speed of light is a cheat or a wrong formula, never a result. Ranks that
      // share a GPU are no measurement of either.
      if (cs.median < rules.roofline_floor * b.us && c.ranks_per_gpu == 1) {
        res.flags.push_back("faster_than_roofline");
        const json timing = res.to_json()["timing"];  // the judge's clock, not forged: kept for whoever looks into it
        violation(res, 0, "faster_than_roofline",
                  "the candidate's median " + fmt_us(cs.median) + " us is under " + fmt_us(100 * rules.roofline_floor) +
                      "% of the roofline bound " + fmt_us(b.us) + " us (" + b.limiter + ", hardware profile " +
                      c.hardware->name + "): faster than the hardware allows, so work was skipped or done "
                      "elsewhere (or the problem's roofline formula is wrong, a bug to report)");
        res.failure->mismatch = {{"timing", timing}};
      }
    }
  }
  // The candidate rank's own reading against its judge's clock: far below it, the times
  // were rewritten in the candidate's process (the judge's are the ones used either way).
  if (res.correct() && judge_clock && c.mps) {
    for (int r = 0; r < w && res.correct(); ++r) {
      if (!cands[r].timing || static_cast<size_t>(r) >= judges.size() || !judges[r].candidate) continue;
      double own = stats_of(cands[r].timing->us).median, judged = stats_of(judges[r].candidate->us).median;
      if (own < rules.self_report_fraction * judged && judged - own > rules.self_report_min_us) {
        res.flags.push_back("timing_unverified");
        violation(res, r, "timing_report",
                  "rank " + std::to_string(r) + "'s own events say its calls took a median " + fmt_us(own) +
                      " us, but its judge's clock saw " + fmt_us(judged) +
                      " us: the times were rewritten inside the candidate's process");
      }
    }
  }
  if (res.correct()) judge_escape(res, cands, rules);
}

}  // namespace pkb::eval
