#include "eval/memory_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "eval/layout.hpp"

namespace pkb::eval {

namespace {

// Of a GPU's memory, what an evaluation may plan to use (the driver and the system keep some).
constexpr double kUsable = 0.95;

uint64_t total(const std::vector<MemoryPart>& parts) {
  uint64_t t = 0;
  for (auto& p : parts) t += p.bytes;
  return t;
}

// The most bytes any rank's inputs, and outputs, take (the judge of the busiest rank).
std::pair<uint64_t, uint64_t> largest_rank_io(const MemoryRequest& r) {
  uint64_t in = 0, out = 0;
  for (int q = 0; q < r.world; ++q) {
    spec::Vars v = r.spec->vars_for(r.size, r.world, q);
    uint64_t i = 0, o = 0;
    for (auto& t : r.spec->inputs)
      if (r.cuda ? !t.host : true) i += spec::bytes_of(t, v, r.dtype);
    for (auto& t : r.spec->outputs)
      if (r.cuda ? !t.host : true) o += spec::bytes_of(t, v, r.dtype);
    in = std::max(in, i);
    out = std::max(out, o);
  }
  return {in, out};
}

}  // namespace

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / double(uint64_t{1} << 30));
  return buf;
}

MemoryPlan plan_memory(const MemoryRequest& r) {
  MemoryPlan p;
  p.memory = r.memory;
  const uint64_t usable = static_cast<uint64_t>(kUsable * static_cast<double>(r.memory));
  HarnessLayout one = plan_harness(*r.spec, r.size, r.world, r.dtype);
  // What the candidate rank's harness holds on the device, and one capture of its outputs
  // in the judge rank (the CPU device: all of it).
  uint64_t set = one.set_device + (r.cuda ? 0 : one.set_host);
  uint64_t capture = one.out_device + (r.cuda ? 0 : one.out_host);
  auto [in, out] = largest_rank_io(r);

  // The judge: the reference's inputs, outputs and working memory (its peak: it runs on the
  // judge's own inputs). Declared by the spec, or estimated.
  uint64_t ref_peak = r.reference_peak;
  p.reference_source = r.reference_peak_source;
  if (ref_peak == 0 && !r.spec->reference_peak.empty()) {
    for (int q = 0; q < r.world; ++q)
      ref_peak = std::max(ref_peak, static_cast<uint64_t>(r.spec->reference_peak.eval(
                                        r.spec->roofline_vars(r.size, r.world, q, r.dtype))));
    p.reference_source = "declared";
  }
  if (ref_peak == 0) {
    ref_peak = in + out + std::max(in, out);  // its inputs and outputs, and one temporary of the larger
    p.reference_source = "estimated";
  }
  // The judge also holds the captures of the candidate's outputs, taken as each call ends:
  // one a timed call, and one for the calls after the rounds (jobs/eval_judge.cpp).
  int want = r.timing ? std::max(r.iters, 1) + 1 : 1;
  int floor = r.timing ? std::min(r.min_captures, want) : 1;
  // Where memory cannot hold the floor, fewer still: never under this many.
  const int least = r.timing ? std::min(want, kLeastCaptures) : 1;
  p.captures = r.timing ? captures_for(capture, r.capture_budget, want, floor) : 1;
  uint64_t heap_default = std::max(kMinCandidateHeap, 2 * (one.set_device - kGateBytes + one.set_host));
  p.candidate_heap = r.candidate_heap ? r.candidate_heap : heap_default;
  auto judge_parts = [&] {
    std::vector<MemoryPart> j = {{"reference (peak: inputs, outputs, working memory; " + p.reference_source + ")", ref_peak},
                                 {"captured outputs (" + std::to_string(p.captures) + " calls)", p.captures * capture},
                                 {"process runtime", kRankRuntime}};
    if (r.nccl) j.push_back({"NCCL buffers", kNcclBuffers});
    return j;
  };
  // The two ranks never hold the reference's working memory at once: the judge gives its
  // cache back after the trials, the candidate rank after the baseline and the rounds, and
  // the judge's part of it in the rounds is the inputs it writes (jobs/eval_*.cpp).
  const uint64_t ref_work = r.timing && ref_peak > in ? ref_peak - in : 0;
  // The candidate rank: its harness, the candidate's own heap, its runtime, and with timing
  // the reference timed beside the candidate (on the harness's inputs: the rest of its peak).
  auto candidate_parts = [&] {
    std::vector<MemoryPart> c = {{"gate and inputs and outputs (one set)", set},
                                 {"the candidate's own heap", p.candidate_heap},
                                 {"process runtime", kRankRuntime}};
    if (r.timing) c.push_back({"the reference's working memory (timed here; never beside the judge's)", ref_work});
    if (r.nccl) c.push_back({"NCCL buffers", kNcclBuffers});
    return c;
  };
  auto per_gpu = [&] {
    return static_cast<uint64_t>(r.ranks_per_gpu) * (total(candidate_parts()) + total(judge_parts()) - ref_work);
  };
  // pkb's own buffers shrink first: fewer captures (a secret sample, never under the floor),
  // then the default candidate heap down to one set's worth (never under 256 MiB).
  if (per_gpu() > usable && p.captures > least) {
    uint64_t over = per_gpu() - usable, each = std::max<uint64_t>(r.ranks_per_gpu * capture, 1);
    uint64_t fewer = std::min<uint64_t>((over + each - 1) / each, p.captures - least);
    int before = p.captures;
    p.captures -= static_cast<int>(fewer);
    p.notes.push_back("captures " + std::to_string(p.captures) + " timed calls' outputs (a secret sample), not " +
                      std::to_string(before) + ", to fit");
  }
  if (per_gpu() > usable && !r.candidate_heap) {
    uint64_t over = per_gpu() - usable, room = (p.candidate_heap - kMinCandidateHeap) * r.ranks_per_gpu;
    uint64_t cut = std::min(over, room) / r.ranks_per_gpu;
    p.candidate_heap -= cut;
    if (cut) p.notes.push_back("the candidate's own heap is " + gib(p.candidate_heap) + " (--heap-size), not " +
                               gib(heap_default) + ", to fit");
  }
  p.candidate = candidate_parts();
  p.candidate_rank = total(p.candidate);
  p.judge = judge_parts();
  p.judge_rank = total(p.judge);
  p.per_gpu = per_gpu();
  p.fits = p.per_gpu <= usable;
  // The judges time the reference in their own processes at the rounds' ends too (the
  // machine's drift, eval/interleave.hpp) where both working memories fit at once.
  p.judge_paces = r.timing && p.per_gpu + static_cast<uint64_t>(r.ranks_per_gpu) * ref_work <= usable;
  if (r.timing && p.fits && !p.judge_paces)
    p.notes.push_back("the judges do not time the reference beside the rounds (its working memory twice does not fit): "
                      "the reference beside the candidate is held to its baseline alone, with no allowance for the "
                      "machine's drift");
  if (!p.fits) {
    std::ostringstream os;
    os << r.spec->slug << " at --size " << r.size << " on " << r.world << " rank" << (r.world > 1 ? "s" : "")
       << " needs ~" << gib(p.per_gpu) << " on each " << (r.cuda ? "GPU" : "host") << " ("
       << (r.ranks_per_gpu > 1 ? std::to_string(r.ranks_per_gpu) + " ranks sharing it, each " : "")
       << "candidate rank " << gib(p.candidate_rank) << " + judge rank " << gib(p.judge_rank) << "), which has "
       << gib(r.memory) << (r.cuda ? "" : " available")
       << "; use a smaller --size, more GPUs (fewer ranks a GPU), or --heap-size (pkb eval --dry-plan shows the parts)";
    p.refusal = os.str();
  }
  return p;
}

std::string MemoryPlan::table() const {
  std::ostringstream os;
  auto side = [&](const char* who, const std::vector<MemoryPart>& parts, uint64_t sum) {
    os << who << ": " << gib(sum) << "\n";
    for (auto& x : parts) {
      char line[160];
      std::snprintf(line, sizeof line, "  %-62s %12s\n", x.name.c_str(), gib(x.bytes).c_str());
      os << line;
    }
  };
  side("candidate rank", candidate, candidate_rank);
  side("judge rank", judge, judge_rank);
  os << "on each device: " << gib(per_gpu) << " of " << gib(memory) << (fits ? "" : "  (does not fit)") << "\n";
  for (auto& n : notes) os << "note: " << n << "\n";
  return os.str();
}

}  // namespace pkb::eval
