#include "report/leaderboard.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace pkb::report {

const char* const kRankOrder =
    "Runs are ranked by geo-mean speedup over their correct candidates whose timing counts (runs with no such "
    "timing come after those with one), then by fast_1, then by correct, then by name.";

double pass_at_k(int n, int c, int k) {
  if (n - c < k) return 1.0;
  // C(n-c,k)/C(n,k) as a product, which stays exact enough for any n.
  double fail = 1.0;
  for (int i = 0; i < k; ++i) fail *= static_cast<double>(n - c - i) / static_cast<double>(n - i);
  return 1.0 - fail;
}

void Rates::add(const Evaluation& e) {
  fast.resize(kSpeedupThresholds.size());
  ++evaluations;
  ++verdicts[e.verdict];
  compiled += e.compiled();
  if (!e.correct()) return;
  ++correct;
  if (!e.timing_counts) {
    not_meaningful += e.speedup.has_value();
    return;
  }
  if (e.speedup && *e.speedup > 0) {
    ++timed;
    log_speedup_sum_ += std::log(*e.speedup);
    for (size_t i = 0; i < kSpeedupThresholds.size(); ++i) fast[i] += *e.speedup > kSpeedupThresholds[i];
  }
  if (e.roofline_fraction) {
    ++roofline_n_;
    roofline_sum_ += *e.roofline_fraction;
  }
}

void Rates::finish() {
  fast.resize(kSpeedupThresholds.size());
  if (timed) geomean_speedup = std::exp(log_speedup_sum_ / timed);
  if (roofline_n_) mean_roofline_fraction = roofline_sum_ / roofline_n_;
}

namespace {

using Instance = std::tuple<int, std::string, int, std::string>;  // problem id, slug, world, size

Instance instance_of(const Evaluation& e) { return {e.problem_id, e.problem, e.world, e.size}; }

// A speedup that says something about speed; 0 for one that does not.
double counted_speedup(const Evaluation& e) { return e.correct() && e.timing_counts ? e.speedup.value_or(0) : 0; }

// The same candidate file, wherever it was evaluated from.
std::string identity(const Evaluation& e) { return e.sha256.empty() ? e.path : e.sha256; }

// The best candidate of one problem: its files' counted speedups, each file ranked by its
// median (the lower one of an even count) so that repeats never pick the luckiest run.
void choose_best(BestCandidate& b, const std::vector<const Evaluation*>& counted) {
  std::map<std::string, std::vector<const Evaluation*>> by_file;
  std::vector<std::string> order;
  for (auto* e : counted) {
    auto& v = by_file[identity(*e)];
    if (v.empty()) order.push_back(identity(*e));
    v.push_back(e);
  }
  double top = 0;
  for (auto& id : order) {
    auto v = by_file[id];
    std::stable_sort(v.begin(), v.end(), [](auto* a, auto* c) { return *a->speedup < *c->speedup; });
    const Evaluation* mid = v[(v.size() - 1) / 2];
    if (b.best && *mid->speedup <= top) continue;
    top = *mid->speedup;
    b.best = *mid;
    b.repeats = static_cast<int>(v.size());
    b.repeat_low = *v.front()->speedup;
    b.repeat_high = *v.back()->speedup;
  }
}

std::string join_seeds(const std::set<std::string>& s) {
  std::string out;
  for (auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

Header header_of(const std::vector<Evaluation>& evaluations) {
  Header h;
  for (auto& e : evaluations) {
    if (!e.pkb_version.empty()) {
      h.versions.insert(e.pkb_version + (e.commit.empty() ? "" : " (commit " + e.commit + ")"));
      h.pkb_versions.insert(e.pkb_version);
      if (e.commit.empty()) ++h.without_commit;
      else h.commits.insert(e.commit);
    }
    if (!e.torch.empty()) h.torch.insert(e.torch);
    if (!e.nccl.empty()) h.nccl.insert(e.nccl);
    if (!e.cuda_runtime.empty()) h.cuda_runtime.insert(e.cuda_runtime);
    if (!e.cuda_driver.empty()) h.cuda_driver.insert(e.cuda_driver);
    h.devices.insert(e.device + (e.gpu.empty() ? "" : " (" + e.gpu + ")"));
    if (!e.hardware_profile.empty()) h.profiles.insert(e.hardware_profile);
    h.sizes.insert(e.size);
    if (!e.dtype.empty()) h.dtypes.insert(e.dtype);
    if (!e.seed.empty()) h.seeds.insert(e.seed);
    if (e.world) h.worlds.insert(e.world);
    auto n = [](const std::optional<int>& v) { return v ? std::to_string(*v) : std::string("default"); };
    ++h.settings["trials " + n(e.trials) + ", warmup " + n(e.warmup) + ", iters " + n(e.iters)];
    auto fewer = [](const std::optional<int>& used, const std::optional<int>& set, int& fewest) {
      if (!used) return false;
      fewest = fewest < 0 ? *used : std::min(fewest, *used);
      return set && *used < *set;
    };
    bool cut = fewer(e.trials_run, e.trials, h.fewest_trials);
    cut = fewer(e.warmup_used, e.warmup, h.fewest_warmup) || cut;
    cut = fewer(e.iters_used, e.iters, h.fewest_iters) || cut;
    if (cut) ++h.cut_by_budgets;
    if (!e.time.empty()) {
      if (h.first_time.empty() || e.time < h.first_time) h.first_time = e.time;
      if (e.time > h.last_time) h.last_time = e.time;
    }
  }
  return h;
}

// A few names, then how many more: "a, b, c and 4 more".
std::string some_of(const std::set<std::string>& names, size_t most = 4) {
  std::string out;
  size_t shown = 0;
  for (auto& n : names) {
    if (shown == most) return out + " and " + std::to_string(names.size() - most) + " more";
    out += (shown++ ? ", " : "") + n;
  }
  return out;
}

std::vector<std::string> warnings_of(const Header& h, const std::vector<Evaluation>& evaluations) {
  std::vector<std::string> w;
  std::set<std::string> device_kinds;
  for (auto& e : evaluations) device_kinds.insert(e.device);
  if (h.seeds.size() > 1)
    w.push_back("the results mix " + std::to_string(h.seeds.size()) + " seeds" +
                (h.seeds.size() <= 3 ? " (" + join_seeds(h.seeds) + ")" : "") +
                ": their evaluations saw different inputs and timed the reference apart; sweep every run with one "
                "--seed to compare them");
  if (device_kinds.size() > 1)
    w.push_back("the results mix devices (" + join_seeds(device_kinds) +
                "): only CUDA timings with a GPU per rank count for speed");
  if (h.sizes.size() > 1)
    w.push_back("the results mix sizes (" + join_seeds(h.sizes) +
                "): each size is a problem of its own, so runs measured at different sizes are not comparable");
  // Problems have element types of their own; the same problem at two of them is a mix.
  std::map<std::string, std::set<std::string>> dtypes_of;
  for (auto& e : evaluations)
    if (!e.dtype.empty()) dtypes_of[e.problem].insert(e.dtype);
  std::set<std::string> mixed;
  for (auto& [problem, types] : dtypes_of)
    if (types.size() > 1) mixed.insert(problem + " (" + join_seeds(types) + ")");
  if (!mixed.empty())
    w.push_back("the results evaluate the same problem at different element types: " + some_of(mixed) +
                "; their timings are not comparable");
  if (h.settings.size() > 1)
    w.push_back("the results mix " + std::to_string(h.settings.size()) +
                " settings of trials, warmup and iters (the header lists them): fewer trials catch fewer bugs");
  if (h.versions.size() > 1)
    w.push_back("the results come from " + std::to_string(h.versions.size()) + " pkb builds (the header lists them)");
  // A collective at W=1 has no one to talk to: it times a local copy, whatever it is called.
  std::set<std::string> lonely;
  int lonely_n = 0;
  for (auto& e : evaluations)
    if (e.collective && e.world == 1) lonely.insert(e.problem), ++lonely_n;
  if (lonely_n)
    w.push_back(std::to_string(lonely_n) + " evaluation" + (lonely_n == 1 ? " of a collective" : "s of collectives") +
                " at W=1 (" + some_of(lonely) + "): one rank communicates with no one, so these time a local copy, "
                "not a collective; the charts mark them \"no comm.\". Evaluate collectives at W >= 2 to rank them");
  // Packed sweeps time evaluations beside others on the node: they count, but noisily.
  int beside = 0;
  for (auto& e : evaluations) beside += e.timing_counts && e.parallel > 1;
  if (beside)
    w.push_back(std::to_string(beside) + " timing" + (beside == 1 ? " was" : "s were") +
                " taken beside other evaluations on the node (pkb sweep --parallel): noisier than one at a time; "
                "sweep with --parallel 1 for timings to publish");
  std::map<std::string, int> uncounted;
  for (auto& e : evaluations)
    if (e.correct() && !e.timing_counts && !e.timing_note.empty() && e.timing_note != "untimed") ++uncounted[e.timing_note];
  for (auto& [why, n] : uncounted)
    w.push_back(std::to_string(n) + " correct evaluation" + (n == 1 ? "" : "s") + " with timings that say nothing "
                "about speed (" + why + "): counted as correct, never as fast, and left out of speedups and the best "
                "candidate");
  return w;
}

// Whether turn `a` of a pkb agent sample stands for it better than turn `b`: correct first,
// then faster (the earlier of equals); among failures the later.
bool better_turn(const Evaluation& a, const Evaluation& b) {
  if (a.correct() != b.correct()) return a.correct();
  if (!a.correct()) return a.turn > b.turn;
  double x = counted_speedup(a), y = counted_speedup(b);
  return x > y || (x == y && a.turn < b.turn);
}

using SampleKey = std::tuple<std::string, Instance, int>;  // run, problem, sample

// Every line as it is, but one per pkb agent sample: its best turn.
std::vector<Evaluation> one_per_sample(const std::vector<Evaluation>& all) {
  std::vector<Evaluation> out;
  std::map<SampleKey, size_t> at;
  for (auto& e : all) {
    if (e.turn == 0) {
      out.push_back(e);
      continue;
    }
    auto [it, fresh] = at.emplace(SampleKey{e.run, instance_of(e), e.sample}, out.size());
    if (fresh)
      out.push_back(e);
    else if (better_turn(e, out[it->second]))
      out[it->second] = e;
  }
  return out;
}

// pkb agent runs turn by turn: how many samples had a correct (fast) candidate by then.
std::vector<TurnRow> by_turn(const std::vector<Evaluation>& all, const std::vector<int>& ks) {
  std::map<std::string, std::map<Instance, std::map<int, std::vector<const Evaluation*>>>> runs;
  std::map<std::string, int> last_turn;
  for (auto& e : all)
    if (e.turn > 0) {
      runs[e.run][instance_of(e)][e.sample].push_back(&e);
      last_turn[e.run] = std::max(last_turn[e.run], e.turn);
    }
  const size_t P = kSpeedupThresholds.size();
  std::vector<TurnRow> rows;
  for (auto& [run, problems] : runs) {
    for (int t = 1; t <= last_turn[run]; ++t) {
      TurnRow row;
      row.run = run;
      row.turn = t;
      row.samples = std::numeric_limits<int>::max();
      row.fast.assign(P, 0.0);
      std::vector<std::pair<int, int>> nc;  // per problem: samples, correct by turn t
      for (auto& [inst, samples] : problems) {
        int n = static_cast<int>(samples.size()), c = 0;
        std::vector<int> fast(P, 0);
        for (auto& [k, turns] : samples) {
          bool ok = false;
          double best = 0;
          for (auto* e : turns)
            if (e->turn <= t && e->correct()) {
              ok = true;
              best = std::max(best, counted_speedup(*e));
            }
          c += ok;
          for (size_t i = 0; i < P; ++i) fast[i] += ok && best > kSpeedupThresholds[i];
        }
        nc.emplace_back(n, c);
        row.samples = std::min(row.samples, n);
        for (size_t i = 0; i < P; ++i) row.fast[i] += double(fast[i]) / n / problems.size();
      }
      for (int k : ks) {
        if (k < 1 || k > row.samples) {
          row.pass_at_k[k] = std::nullopt;
          continue;
        }
        double sum = 0;
        for (auto& [n, c] : nc) sum += pass_at_k(n, c, k);
        row.pass_at_k[k] = sum / nc.size();
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace

Summary summarize(const std::vector<Evaluation>& all, const std::vector<int>& ks) {
  Summary s;
  s.ks = ks;
  s.evaluations = all.size();
  s.turns = by_turn(all, ks);
  const std::vector<Evaluation> evaluations = one_per_sample(all);
  s.header = header_of(evaluations);
  s.warnings = warnings_of(s.header, evaluations);

  std::map<std::string, Rates> by_run;
  std::map<std::string, std::set<std::string>> backends;  // run -> its candidates' backends
  std::map<std::string, std::map<Instance, std::pair<int, std::vector<int>>>> samples;  // run -> problem -> n, c per p
  std::map<std::string, int> category_order;  // category -> its first problem id
  std::map<std::pair<std::string, std::string>, Rates> by_category;
  std::map<Instance, BestCandidate> best;
  std::map<Instance, std::vector<const Evaluation*>> counted;
  std::map<Instance, MatrixRow> matrix;
  const size_t P = kSpeedupThresholds.size();
  for (auto& e : evaluations) {
    by_run[e.run].add(e);
    if (!e.backend.empty()) backends[e.run].insert(e.backend);
    auto& [n, c] = samples[e.run][instance_of(e)];
    c.resize(P + 1);  // c[0]: correct; c[1+i]: correct and faster than threshold i
    ++n;
    if (e.correct()) {
      ++c[0];
      for (size_t i = 0; i < P; ++i) c[1 + i] += counted_speedup(e) > kSpeedupThresholds[i];
    }
    auto [it, fresh] = category_order.emplace(e.category, e.problem_id);
    if (!fresh) it->second = std::min(it->second, e.problem_id);
    by_category[{e.category, e.run}].add(e);

    BestCandidate& b = best[instance_of(e)];
    b.problem = e.problem;
    b.category = e.category;
    b.problem_id = e.problem_id;
    b.world = e.world;
    b.size = e.size;
    ++b.evaluated;
    MatrixRow& row = matrix[instance_of(e)];
    row.problem = e.problem;
    row.problem_id = e.problem_id;
    row.world = e.world;
    row.size = e.size;
    MatrixCell& cell = row.cells[e.run];
    ++cell.evaluated;
    if (e.correct()) {
      ++b.correct;
      ++cell.correct;
      if (counted_speedup(e) > 0) {
        counted[instance_of(e)].push_back(&e);
        if (!cell.fastest || *e.speedup > *cell.fastest->speedup) cell.fastest = e;
      } else {
        if (!b.correct_uncounted) b.correct_uncounted = e;
        if (!e.timing_note.empty()) cell.notes.insert(e.timing_note);
      }
    } else {
      s.failures.push_back(e);
    }
  }

  for (auto& [run, rates] : by_run) {
    s.run_names.push_back(run);
    RunSummary r;
    r.run = run;
    for (auto& b : backends[run]) r.backend += (r.backend.empty() ? "" : ",") + b;
    r.rates = rates;
    r.rates.finish();
    auto& problems = samples[run];
    r.problems = static_cast<int>(problems.size());
    r.min_samples = std::numeric_limits<int>::max();
    for (auto& [inst, nc] : problems) r.min_samples = std::min(r.min_samples, nc.first);
    for (int k : ks) {
      std::vector<double> sums(P + 1, 0.0);
      bool defined = k >= 1 && k <= r.min_samples;
      if (defined)
        for (auto& [inst, nc] : problems)
          for (size_t i = 0; i <= P; ++i) sums[i] += pass_at_k(nc.first, nc.second[i], k);
      auto mean = [&](size_t i) { return defined ? std::optional<double>(sums[i] / r.problems) : std::nullopt; };
      r.pass_at_k[k] = mean(0);
      for (size_t i = 0; i < P; ++i) r.fast_at_k[k].push_back(mean(1 + i));
    }
    s.runs.push_back(std::move(r));
  }

  // The leaderboard's order (kRankOrder).
  auto fraction = [](int part, int whole) { return whole ? double(part) / whole : 0.0; };
  std::stable_sort(s.runs.begin(), s.runs.end(), [&](const RunSummary& a, const RunSummary& b) {
    const Rates &x = a.rates, &y = b.rates;
    if (x.geomean_speedup.has_value() != y.geomean_speedup.has_value()) return x.geomean_speedup.has_value();
    if (x.geomean_speedup && *x.geomean_speedup != *y.geomean_speedup) return *x.geomean_speedup > *y.geomean_speedup;
    double fx = fraction(x.fast.empty() ? 0 : x.fast[0], x.evaluations);
    double fy = fraction(y.fast.empty() ? 0 : y.fast[0], y.evaluations);
    if (fx != fy) return fx > fy;
    double cx = fraction(x.correct, x.evaluations), cy = fraction(y.correct, y.evaluations);
    if (cx != cy) return cx > cy;
    return a.run < b.run;
  });
  std::map<std::string, int> rank_of;
  s.run_names.clear();
  for (size_t i = 0; i < s.runs.size(); ++i) {
    s.runs[i].rank = static_cast<int>(i) + 1;
    rank_of[s.runs[i].run] = s.runs[i].rank;
    s.run_names.push_back(s.runs[i].run);
  }

  for (auto& [key, rates] : by_category) {
    CategoryRow row{key.first, key.second, rates};
    row.rates.finish();
    s.categories.push_back(std::move(row));
  }
  std::stable_sort(s.categories.begin(), s.categories.end(), [&](const CategoryRow& a, const CategoryRow& b) {
    return std::make_tuple(category_order[a.category], a.category, rank_of[a.run]) <
           std::make_tuple(category_order[b.category], b.category, rank_of[b.run]);
  });
  for (auto& [inst, b] : best) {
    choose_best(b, counted[inst]);
    if (b.best) b.correct_uncounted.reset();
    s.best.push_back(b);
  }
  for (auto& [inst, row] : matrix) s.matrix.push_back(row);
  std::stable_sort(s.failures.begin(), s.failures.end(), [](const Evaluation& a, const Evaluation& b) {
    return std::make_tuple(a.problem_id, a.problem, a.world, a.size, a.run, a.sample) <
           std::make_tuple(b.problem_id, b.problem, b.world, b.size, b.run, b.sample);
  });
  return s;
}

}  // namespace pkb::report
