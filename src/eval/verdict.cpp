#include "eval/verdict.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <utility>

#include "eval/stats.hpp"
#include "io/text.hpp"

namespace pkb::eval {

using json = nlohmann::json;

namespace {

const std::pair<const char*, int> kExitOfVerdict[] = {
    {"correct", kOk},   {"wrong", kWrong},     {"compile_error", kCompileError},
    {"crash", kCrash},  {"timeout", kTimeout}, {"integrity_violation", kIntegrity},
};

std::string fmt_us(double us) { return io::format("%.1f", us); }

void set_verdict(json& res, const std::string& verdict, const std::string& message) {
  res["verdict"] = verdict;
  res["message"] = message;
}

// A violation found after the calls were timed: no timing is reported.
void violation(json& res, int rank, const std::string& reason, const std::string& message) {
  set_verdict(res, "integrity_violation", message);
  res["failure"] = {{"rank", rank}, {"phase", "timing"}, {"reason", reason}, {"detail", message}};
  for (auto key : {"timing", "speedup", "roofline", "busbw_gbps"}) res[key] = nullptr;
}

// A group that did not finish: timeout, or a rank that died. Returns false when it did.
bool judge_outcome(json& res, const launch::GroupReport& rep) {
  if (rep.outcome == launch::Outcome::Timeout) {
    set_verdict(res, "timeout", rep.summary);
    return true;
  }
  if (rep.outcome != launch::Outcome::Crash) return false;
  for (auto& rk : rep.ranks) {
    if (rk.error_kind == "abi") {
      set_verdict(res, "compile_error", rk.error_message);
      return true;
    }
    if (rk.error_kind == "sandbox" || rk.signal == SIGSYS) {
      std::string what = rk.error_kind == "sandbox" ? rk.error_message
                                                    : "rank " + std::to_string(rk.rank) +
                                                          " was killed by SIGSYS: the candidate made a system call "
                                                          "pkb's sandbox denies and would not let pkb report it";
      set_verdict(res, "integrity_violation", what);
      res["failure"] = {{"rank", rk.rank}, {"phase", rk.phase}, {"reason", "sandbox"}, {"detail", what}};
      return true;
    }
  }
  set_verdict(res, "crash", rep.summary);
  return true;
}

void judge_escape(json& res, const json& ranks, const Rules& rules, json& flags) {
  for (auto& r : ranks) {
    if (!r.contains("escape")) continue;
    const json& x = r["escape"];
    double h = stats_of(x["host_us"].get<std::vector<double>>()).median;
    double e = stats_of(x["event_us"].get<std::vector<double>>()).median;
    double base = stats_of(x["baseline_host_us"].get<std::vector<double>>()).median;
    int calls = x["calls"];
    std::string capture = x.value("capture", "unknown");
    res["escape_check"] = {{"calls", calls}, {"host_us", h}, {"event_us", e}, {"baseline_us", base}, {"capture", capture}};
    std::string how;
    if (capture == "unjoined")
      how = "pkb_run forks work off ctx->stream and never joins it back (a captured call leaves an unjoined fork)";
    else if (h - e - base > std::max(rules.escape_min_us, rules.escape_fraction * e))
      how = std::to_string(calls) + " calls take " + fmt_us(h) + " us of device-synchronised host time but " +
            fmt_us(e) + " us on the stream pkb times";
    if (how.empty()) continue;
    violation(res, r["rank"], "timing_escape",
              "work escapes the timed stream on rank " + std::to_string(r["rank"].get<int>()) + ": " + how +
                  "; run everything on ctx->stream, or join every stream you fork back to it before returning");
    flags.push_back("timing_escape");
    return;
  }
}

}  // namespace

int verdict_exit_code(const std::string& verdict) {
  for (auto& [v, code] : kExitOfVerdict)
    if (verdict == v) return code;
  return kInternal;
}

std::string exit_code_verdict(int code) {
  for (auto& [v, c] : kExitOfVerdict)
    if (c == code) return v;
  return "";
}

json judge(json& res, const launch::GroupReport& rep, const Context& c, const Rules& rules) {
  json flags = json::array();
  if (rep.leftovers_ended > 0) flags.push_back("left_processes");
  res["flags"] = flags;
  if (judge_outcome(res, rep)) return nullptr;

  std::vector<json> ranks;
  for (auto& rk : rep.ranks) ranks.push_back(json::parse(rk.result));
  res["run"]["input_sets"] = ranks[0].value("input_sets", 0);
  res["phases_ms"] = ranks[0].value("phase_ms", json::object());
  if (ranks[0].contains("sandbox")) res["sandbox"] = ranks[0]["sandbox"];
  // Every rank agreed on the first failure (the ranks' jobs all-gather it).
  json fail = ranks[0]["failure"];
  if (!fail.is_null()) {
    std::string tensor = fail["output"].get<std::string>();
    std::string where = "rank " + std::to_string(fail["rank"].get<int>()) +
                        (tensor.empty() ? "" : (fail["reason"] == "input_mutated" ? ", input '" : ", output '") + tensor + "'") +
                        (fail["phase"] == "trial" ? ", trial " + std::to_string(fail["trial"].get<int64_t>())
                                                  : ", during timing");
    set_verdict(res, fail["verdict"], where + ": " + fail["detail"].get<std::string>());
    res["failure"] = fail;
    return nullptr;
  }
  set_verdict(res, "correct", std::to_string(ranks[0]["trials_run"].get<int>()) + " trials on " +
                                  std::to_string(c.world) + " ranks" + (c.timing ? ", timed calls checked" : ""));
  // Outputs passed with elements outside atol/rtol that the spec's mismatch allows: said.
  int tolerated = 0;
  int64_t most = 0;
  for (auto& r : ranks)
    if (r.contains("tolerated")) {
      tolerated += r["tolerated"]["outputs"].get<int>();
      most = std::max(most, r["tolerated"]["max_elements"].get<int64_t>());
    }
  if (tolerated > 0) {
    res["mismatch_tolerated"] = {{"outputs", tolerated}, {"max_elements", most}};
    res["message"] = res["message"].get<std::string>() + "; " + std::to_string(tolerated) +
                     " outputs (over ranks and calls) had up to " + std::to_string(most) +
                     " elements outside atol/rtol, within the spec's mismatch allowance";
  }
  if (!c.timing) return nullptr;

  std::vector<std::vector<double>> cand, ref;
  for (auto& r : ranks) {
    cand.push_back(r["candidate_us"].get<std::vector<double>>());
    if (r.contains("reference_us")) ref.push_back(r["reference_us"].get<std::vector<double>>());
  }
  Stats cs = stats_of(slowest_per_call(cand));
  Stats rs = ref.empty() ? Stats::from_json(c.cached_reference) : stats_of(slowest_per_call(ref));
  json to_cache = ref.empty() ? json() : rs.to_json();
  res["timing"] = {{"reference", rs.to_json()}, {"candidate", cs.to_json()}, {"reference_cached", ref.empty()}};
  res["speedup"] = cs.median > 0 ? rs.median / cs.median : 0;
  const spec::ProblemSpec& s = *c.spec;
  if (!s.roofline.bus_factor.empty())
    res["busbw_gbps"] = {{"reference", busbw_gbps(s, c.size, c.world, c.dtype, rs.median)},
                         {"candidate", busbw_gbps(s, c.size, c.world, c.dtype, cs.median)}};
  for (auto& r : ranks)
    if (r.contains("clocks") && r["clocks"]["throttled"].get<bool>()) {
      flags.push_back("throttled");
      break;
    }
  if (c.ranks_per_gpu > 1) flags.push_back("shared_gpu");
  if (res["run"]["input_sets"].get<int>() < c.iters) flags.push_back("few_input_sets");
  if (ranks[0].contains("device_copy")) res["device_copy"] = ranks[0]["device_copy"];
  res["clocks"] = ranks[0].value("clocks", json());

  if (c.hardware) {
    Bound b = roofline_bound(s, c.size, c.world, c.dtype, *c.hardware);
    if (b.us > 0) {
      res["roofline"] = {{"bound_us", b.us}, {"fraction", b.us / cs.median}, {"limiter", b.limiter},
                         {"nvlink_us", b.nvlink_us}, {"hbm_us", b.hbm_us}, {"flops_us", b.flops_us}};
      // Below the speed of light is a cheat or a wrong formula, never a result. Ranks that
      // share a GPU are no measurement of either.
      if (cs.median < rules.roofline_floor * b.us && c.ranks_per_gpu == 1) {
        flags.push_back("faster_than_roofline");
        violation(res, 0, "faster_than_roofline",
                  "the candidate's median " + fmt_us(cs.median) + " us is under " + fmt_us(100 * rules.roofline_floor) +
                      "% of the roofline bound " + fmt_us(b.us) + " us (" + b.limiter + ", hardware profile " +
                      c.hardware->name + "): faster than the hardware allows, so work was skipped or done "
                      "elsewhere (or the problem's roofline formula is wrong, a bug to report)");
      }
    }
  }
  if (res["verdict"] == "correct") judge_escape(res, json(ranks), rules, flags);
  res["flags"] = flags;
  return to_cache;
}

bool timing_in_doubt(const json& flags) {
  for (auto& f : flags)
    if (f == "throttled" || f == "shared_gpu" || f == "left_processes" || f == "faster_than_roofline" ||
        f == "timing_escape")
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
