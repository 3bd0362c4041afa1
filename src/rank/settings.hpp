// What one evaluation measures and how much: the settings `pkb eval` takes as flags, each
// with its default, flag and meaning stated here once (nvbench's typed settings). cli/ binds
// its flags to them, the ranks get them inside their job (rank/job.hpp), the record keeps
// them (run.settings), and pkb sweep and pkb agent turn them back into a `pkb eval` command
// line (to_flags). Torch-free.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pkb::rank {

struct EvalSettings {
  std::string size = "default";  // a --size value
  std::string dtype;             // what dt stands for ("": the spec's)
  int trials = 100, min_trials = 5;
  double trials_budget_s = 60;
  int warmup = 500;
  double warmup_budget_s = 1;
  int iters = 100, min_iters = 10, max_iters = 1000, baseline_iters = 200, block = 10;
  double timing_budget_s = 10, interval_target = 0.03, reference_drift = 0.10, machine_drift = 0.25;
  bool timing = true;
  std::string cache = "cold";
};

// One setting as a flag: its long name (and a short one), its JSON key, what it means, and
// the range (numbers) or choices (strings) it takes.
struct Setting {
  const char* flag;       // "--trials"; for a bool, the flag that turns it off ("--no-timing")
  const char* short_flag; // "-n", or ""
  const char* key;        // "trials": its name in JSON
  const char* help;
  double min = 0, max = -1;          // numbers: the range (max < min: none)
  std::vector<const char*> choices;  // strings: the values it takes (empty: any)
};

// Calls f(setting, member) for every setting, in one fixed order; `member` is an int&,
// double&, bool& or std::string& into `s` (const where `s` is).
template <class S, class F>
void for_each_setting(S& s, F&& f) {
  f(Setting{"--size", "", "size", "size: default, large, ..., or with sizes replaced: large:M=4096,N=512 or M=4096 (on default)"},
    s.size);
  f(Setting{"--dtype", "", "dtype", "element type for the problem's 'dt' tensors: bf16 (or bfloat16), fp16, fp32, ..."},
    s.dtype);
  f(Setting{"--trials", "-n", "trials", "correctness trials, each with fresh random inputs (not timed calls: --iters)", 1,
            100000},
    s.trials);
  f(Setting{"--min-trials", "", "min_trials", "trials whatever the budget", 1, 100000}, s.min_trials);
  f(Setting{"--trials-budget", "", "trials_budget_s", "seconds after which trials stop, once --min-trials ran", 0, 1e6},
    s.trials_budget_s);
  f(Setting{"--warmup", "", "warmup", "untimed calls before timing, each side (nccl-tests' -w; pkb's -w is --world-size)", 0,
            1000000},
    s.warmup);
  f(Setting{"--warmup-budget", "", "warmup_budget_s", "seconds after which warm-up stops (at least one call)", 0, 1e6},
    s.warmup_budget_s);
  f(Setting{"--iters", "", "iters",
            "timed calls a side (nccl-tests' -n; pkb's -n is --trials), more while the speedup's interval is wider than "
            "--interval",
            1, 1000000},
    s.iters);
  f(Setting{"--min-iters", "", "min_iters", "timed calls a side whatever the budget", 1, 1000000}, s.min_iters);
  f(Setting{"--max-iters", "", "max_iters",
            "timed calls a side at most: past --iters the rounds go on while the speedup's interval is wider than --interval",
            1, 1000000},
    s.max_iters);
  f(Setting{"--timing-budget", "", "timing_budget_s",
            "seconds of timed calls a side: fewer than --iters where calls are long, never under --min-iters", 0, 1e6},
    s.timing_budget_s);
  f(Setting{"--baseline-iters", "", "baseline_iters",
            "calls of the reference alone in the candidate rank before the candidate is loaded: the baseline its calls "
            "beside the candidate are held to",
            1, 1000000},
    s.baseline_iters);
  f(Setting{"--block", "", "block", "timed calls of one side in a row; the two sides alternate in rounds", 1, 1000}, s.block);
  f(Setting{"--interval", "", "interval_target",
            "the speedup's 95% interval, +- this fraction of it, that the rounds go on for (within the budget)", 0, 1},
    s.interval_target);
  f(Setting{"--reference-drift", "", "reference_drift",
            "how much slower than its baseline (times the machine's own drift) the reference is credited beside the "
            "candidate (a candidate that slows it down gains no more)",
            0, 10},
    s.reference_drift);
  f(Setting{"--machine-drift", "", "machine_drift",
            "how much of the machine's own slow-down (the reference timed in the judges' processes, beside the baseline "
            "and the rounds) the bound on the reference allows for",
            0, 10},
    s.machine_drift);
  f(Setting{"--no-timing", "", "timing", "check correctness only"}, s.timing);
  f(Setting{"--cache", "", "cache", "cold: evict the L2 before each timed call; warm: do not", 0, -1, {"cold", "warm"}},
    s.cache);
}

// The flags that give `s` (long names, each followed by its value; --no-timing alone),
// those at their default left out: what pkb sweep and pkb agent append to `pkb eval`.
std::vector<std::string> to_flags(const EvalSettings& s);

nlohmann::json to_json(const EvalSettings& s);
// Throws nlohmann::json::exception on a malformed value; keys it lacks keep their defaults.
EvalSettings settings_from_json(const nlohmann::json& j);

}  // namespace pkb::rank
