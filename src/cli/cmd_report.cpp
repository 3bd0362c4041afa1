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

void add_report_command(CLI::App& app, Globals&, Action& run) {
  static ReportOptions o;
  auto* cmd = app.add_subcommand("report", "Summarise evaluation results: a leaderboard per run, category, problem");
  cmd->add_option("results", o.inputs, "results files (.jsonl) or folders of them (pkb sweep --out)")
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
      report::Results results;
      try {
        results = report::load_results(o.inputs);
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
      if (results.evaluations.empty())
        throw UsageError("no pkb.eval/1 result in " + o.inputs.front() +
                         (results.bad_lines ? " (" + std::to_string(results.bad_lines) + " other lines)" : "") +
                         "; give the files pkb sweep --out or pkb eval --json wrote");
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
