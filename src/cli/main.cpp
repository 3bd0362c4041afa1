// pkb: ParallelKernelBench. One binary: the commands below, and the three hidden modes the
// binary runs in its own child processes (a rank, the ranks' fork server, the device probe),
// which load the rank library.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/commands.hpp"
#include "eval/verdict.hpp"
#include "run/rank_library.hpp"

#ifndef PKB_DEFAULT_ROOT
#define PKB_DEFAULT_ROOT "."
#endif

int main(int argc, char** argv) {
  using namespace pkb::cli;
  // The hidden modes run torch, so they go through the rank library (ranklib/entry.hpp).
  const char* mode = argc >= 2 ? argv[1] : "";
  if (!std::strcmp(mode, "__worker") || !std::strcmp(mode, "__fork_server") || !std::strcmp(mode, "__probe")) {
    const pkb::ranklib::RankEntry* rank = nullptr;
    try {
      rank = &pkb::run::rank_library();
    } catch (const pkb::io::InputError& e) {
      fprintf(stderr, "pkb: error: %s\n", e.what());
      return pkb::eval::kUsage;
    }
    if (!std::strcmp(mode, "__worker")) return rank->worker_main();
    if (!std::strcmp(mode, "__fork_server")) return rank->fork_server_main(argc >= 3 && !std::strcmp(argv[2], "--python"));
    printf("%s\n", rank->probe_json().c_str());
    return 0;
  }

  process_start();
  spdlog::set_pattern("pkb: %^%l%$: %v");
  Globals g;
  g.root = std::getenv("PKB_ROOT") ? std::getenv("PKB_ROOT") : PKB_DEFAULT_ROOT;
  CLI::App app{"pkb: benchmark multi-GPU kernels against libtorch + NCCL references"};
  app.set_version_flag("--version", PKB_VERSION);
  app.require_subcommand(1);
  app.add_option("--root", g.root, "folder holding problems/ and reference/ (env PKB_ROOT)");
  app.add_option("--problem-dir", g.problem_dirs, "extra folder of problem specs (repeatable)");
  app.add_option("--reference-lib", g.reference_libs, "shared object with extra references (repeatable)");
  app.add_flag("-v,--verbose", g.verbose, "say more");

  Action run;
  add_catalog_commands(app, g, run);
  add_dryrun_command(app, g, run);
  add_doctor_commands(app, g, run);
  add_eval_commands(app, g, run);
  add_build_command(app, g, run);
  add_validate_commands(app, g, run);
  add_sweep_command(app, g, run);
  add_report_command(app, g, run);
  add_generate_commands(app, g, run);
  add_agent_command(app, g, run);
  add_plan_command(app, g, run);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return explain_parse_error(app, e, argc, argv);
  }
  if (g.verbose) spdlog::set_level(spdlog::level::debug);
  try {
    return run ? run() : int(pkb::eval::kUsage);
  } catch (const pkb::io::InputError& e) {
    fprintf(stderr, "pkb: error: %s\n", e.what());
    return pkb::eval::kUsage;
  } catch (const std::exception& e) {
    fprintf(stderr, "pkb: internal error: %s\n", e.what());
    return pkb::eval::kInternal;
  }
}
