// pkb report: a leaderboard from evaluation results (sweeps, Slurm task files, pkb eval
// --json files): per run compiled, correct, fast_p, pass@k and fast_p@k, geo-mean speedup
// and roofline; tables per category; the best candidate per problem. With --against, the
// results compared with earlier ones instead: what regressed, what improved.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "eval/verdict.hpp"
#include "io/text.hpp"
#include "report/compare.hpp"
#include "report/leaderboard.hpp"
#include "report/render.hpp"
#include "report/results.hpp"

namespace pkb::cli {

namespace {

struct ReportOptions {
  std::vector<std::string> inputs;
  std::string md, html, json;
  std::vector<int> ks = {1, 5, 10};
  std::vector<std::string> against;  // the earlier results: compare instead of ranking
  report::CompareSettings compare;
  std::string threshold;             // --threshold as given ("5", "5%"); "" : compare's default
  bool fail_on_regression = false;
};

// --threshold in percent, with or without the sign: "5", "5%", "2.5%".
double threshold_fraction(const std::string& text) {
  std::string number = !text.empty() && text.back() == '%' ? text.substr(0, text.size() - 1) : text;
  size_t used = 0;
  double percent = -1;
  try {
    percent = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != number.size() || !(percent >= 0) || percent >= 100)
    throw UsageError("--threshold takes a percentage from 0 to 100 (e.g. 5 or 5%), not '" + text + "'");
  return percent / 100;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) throw UsageError("cannot write " + path + "; check that its folder exists and is writable");
}

// Results from `paths`, at least one; files without any are named on stderr. `what` names
// the option the paths came from in the error ("--against ").
report::Results load_named_results(const std::vector<std::string>& paths, const report::SpecLookup& specs, const std::string& what) {
  report::Results results;
  try {
    results = report::load_results(paths, specs);
  } catch (const std::exception& e) {
    throw UsageError(what + e.what());
  }
  if (results.evaluations.empty()) {
    std::string why;
    for (auto& f : results.skipped_files) why += (why.empty() ? "" : "; ") + f.file + ": " + f.why;
    throw UsageError("no pkb.eval/1 result in " + what + (why.empty() ? paths.front() : why) +
                     "; give the files pkb sweep --out or pkb eval --json wrote");
  }
  for (auto& f : results.skipped_files)
    fprintf(stderr, "pkb: note: %s holds no pkb.eval/1 result (%s); left out\n", f.file.c_str(), f.why.c_str());
  return results;
}

int compare_runs(const ReportOptions& o, const report::Results& then, const report::Results& now) {
  report::Comparison c = report::compare(then, now, o.compare);
  printf("%s", report::render_comparison_text(c).c_str());
  if (!o.md.empty()) write_file(o.md, report::render_comparison_markdown(c));
  if (!o.html.empty()) {
    std::string dir = std::filesystem::path(o.html).parent_path().string();
    write_file(o.html, report::render_comparison_html(c, dir.empty() ? "." : dir));
  }
  if (!o.json.empty()) write_file(o.json, report::render_comparison_json(c).dump(2) + "\n");
  if (o.fail_on_regression && c.regressions() > 0) {
    fprintf(stderr, "pkb: %zu regression%s against the earlier results (--fail-on-regression)\n", c.regressions(),
            c.regressions() == 1 ? "" : "s");
    return int(eval::kWrong);
  }
  return int(eval::kOk);
}

}  // namespace

void add_report_command(CLI::App& app, Globals& g, Action& run) {
  static ReportOptions o;
  auto* cmd = app.add_subcommand("report", "Summarise evaluation results: a leaderboard per run, category, problem");
  cmd->add_option("results", o.inputs,
                  "results: what pkb sweep --out writes (JSON Lines), pkb eval --json files, or folders of either")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--md", o.md, "write the report as Markdown");
  cmd->add_option("--html", o.html, "write a self-contained HTML page (inline charts, no network)");
  cmd->add_option("--json", o.json, "write the numbers as JSON (schema pkb.report/1)");
  cmd->add_option("--k", o.ks, "k for pass@k and fast_p@k, a comma list (default 1,5,10)")
      ->delimiter(',')
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--against", o.against,
                  "compare with earlier results (files or folders as for RESULTS; repeatable): verdict changes, then "
                  "speed changes beyond the intervals and --threshold")
      ->expected(1)
      ->allow_extra_args(false)  // one path an --against: the positional RESULTS follow it
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--threshold", o.threshold,
                  "--against: the smallest speed change flagged, in percent (default " +
                      io::format("%g", 100 * report::CompareSettings{}.threshold) + ")");
  cmd->add_flag("--fail-on-regression", o.fail_on_regression,
                "--against: exit 1 when a candidate broke (correct before, or a new integrity_violation) or got "
                "slower beyond the intervals and the threshold");
  cmd->callback([&] {
    run = [&] {
      if (o.against.empty() && (!o.threshold.empty() || o.fail_on_regression))
        throw UsageError("--threshold and --fail-on-regression compare with earlier results: add --against OLD");
      if (!o.threshold.empty()) o.compare.threshold = threshold_fraction(o.threshold);
      // Specs give each problem's flops (TFLOP/s) and whether it is a collective; results of
      // problems this pkb does not know (or a registry that does not load) still report.
      bool registry_ok = true;
      report::SpecLookup specs = [&](const std::string& slug) -> const spec::ProblemSpec* {
        if (!registry_ok) return nullptr;
        try {
          return &g.registry().find(slug);
        } catch (const spec::SpecError&) {
          return nullptr;
        } catch (const std::exception&) {
          registry_ok = false;
          return nullptr;
        }
      };
      report::Results results = load_named_results(o.inputs, specs, "");
      if (!o.against.empty()) return compare_runs(o, load_named_results(o.against, specs, "--against "), results);
      report::Summary summary = report::summarize(results.evaluations, o.ks);
      printf("%s", report::render_text(summary, results).c_str());
      if (!o.md.empty()) write_file(o.md, report::render_markdown(summary, results));
      if (!o.html.empty()) {
        std::string dir = std::filesystem::path(o.html).parent_path().string();
        write_file(o.html, report::render_html(summary, results, dir.empty() ? "." : dir));
      }
      if (!o.json.empty()) write_file(o.json, report::render_json(summary, results).dump(2) + "\n");
      return int(eval::kOk);
    };
  });
}

}  // namespace pkb::cli
