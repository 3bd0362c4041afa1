// Each command adds itself to the app; `run` is set to what executes it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "cli/common.hpp"

namespace pkb::cli {

using Action = std::function<int()>;

void add_catalog_commands(CLI::App& app, Globals& g, Action& run);  // list, show
void add_dryrun_command(CLI::App& app, Globals& g, Action& run);
void add_doctor_commands(CLI::App& app, Globals& g, Action& run);   // doctor, selftest
void add_eval_commands(CLI::App& app, Globals& g, Action& run);     // eval
void add_build_command(CLI::App& app, Globals& g, Action& run);     // build
void add_validate_commands(CLI::App& app, Globals& g, Action& run); // validate, compare
void add_sweep_command(CLI::App& app, Globals& g, Action& run);
void add_report_command(CLI::App& app, Globals& g, Action& run);
void add_generate_commands(CLI::App& app, Globals& g, Action& run);  // generate, prompt
void add_agent_command(CLI::App& app, Globals& g, Action& run);
void add_plan_command(CLI::App& app, Globals& g, Action& run);  // memory plans, no ranks

}  // namespace pkb::cli
