// pkb report: a leaderboard from evaluation results (sweeps, Slurm task files, pkb eval
// --json files): per run compiled, correct, fast_p, pass@k and fast_p@k, geo-mean speedup
// and roofline; tables per category; the best candidate per problem.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "eval/verdict.hpp"
#include "report/render.hpp"
#include "report/results.hpp"
#include "report/leaderboard.hpp"

namespace pkb::cli {

namespace {

struct ReportOptions {
  std::vector<std::string> inputs;
  std::string md, html, json;
  std::vector<int> ks = {1, 5, 10};
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) throw UsageError("cannot write " + path + "; check that its folder exists and is writable");
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
  cmd->callback([&] {
    run = [&] {
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
      report::Results results;
      try {
        results = report::load_results(o.inputs, specs);
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
      if (results.evaluations.empty()) {
        std::string why;
        for (auto& f : results.skipped_files) why += (why.empty() ? "" : "; ") + f.file + ": " + f.why;
        throw UsageError("no pkb.eval/1 result in " + (why.empty() ? o.inputs.front() : why) +
                         "; give the files pkb sweep --out or pkb eval --json wrote");
      }
      for (auto& f : results.skipped_files)
        fprintf(stderr, "pkb: note: %s holds no pkb.eval/1 result (%s); left out\n", f.file.c_str(), f.why.c_str());
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
