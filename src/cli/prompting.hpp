// What pkb prompt, pkb generate and pkb agent share: the prompt flags, the prompt book and
// hardware profile they resolve to, and the problems a selector names.
#pragma once

#include <string>
#include <vector>

#include "cli/common.hpp"
#include "gen/messages.hpp"
#include "gen/prompt.hpp"
#include "spec/hardware.hpp"

namespace pkb::cli {

struct PromptOptions {
  std::string backend, shots, hardware, precision, size = "default", prompts_file;
  int world = 0;

  // `world_help` and `size_help` say what -w and --size mean to the command.
  void add_to(CLI::App* app, const char* world_help = "W the prompt evaluates shapes at (default: the profile's GPUs, else the backend's, else 8)",
              const char* size_help = "size the prompt evaluates shapes at (default: default)") {
    app->add_option("--backend", backend, "cuda, cpu, triton, tk (default: prompts.toml's)");
    app->add_option("--shots", shots, "zero_shot, one_shot, few_shot (default: the backend's)");
    app->add_option("--hardware", hardware,
                    "a profile of hardware/profiles.toml, 'auto' (what pkb doctor sees) or 'none'");
    app->add_option("--precision", precision, "element type for the problems' 'dt' tensors (default: each spec's)");
    app->add_option("-w,--world-size", world, world_help)->check(CLI::Range(1, 1024));
    app->add_option("--size", size, size_help);
    app->add_option("--prompts", prompts_file, "prompt templates (default: <root>/prompts.toml)");
  }
};

// Everything a prompt needs besides the problem, resolved once per command.
struct PromptSetup {
  std::vector<spec::HardwareProfile> profiles;
  gen::PromptBook book;
  const gen::Backend* backend = nullptr;
  std::string shots;
  const spec::HardwareProfile* hardware = nullptr;  // nullptr: none
  std::string detected;
  int world = 8;
};

// Throws UsageError or gen::GenError.
PromptSetup setup_prompts(Globals& g, const PromptOptions& o);

// The prompt for one problem, at the nearest W it runs with (warning when -w was given).
gen::Prompt prompt_for(Globals& g, const PromptSetup& p, const PromptOptions& o, const spec::ProblemSpec& s);

// A model's end in the exit code of pkb generate or pkb agent: refused (its stop reason is
// said on stderr; exit 2) beats some failed requests (exit 1), which beats `code`.
int model_outcome(const std::string& model, const std::string& stop_reason, int failed, int code);

// The tokens line that ends pkb generate and pkb agent; throws `fatal` when set.
void finish_models(int64_t tokens_in, int64_t tokens_out, const std::string& fatal);

// "all" (the benchmark's problems), category keys, slugs, ids or stems, each once.
std::vector<const spec::ProblemSpec*> select_problems(Globals& g, const std::vector<std::string>& keys);
// Whether the keys name a whole category or 'all' (rather than problems one by one).
bool names_categories(const std::vector<std::string>& keys);

}  // namespace pkb::cli
