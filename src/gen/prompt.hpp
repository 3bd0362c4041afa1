// Prompts from prompts.toml: shared templates, per-backend system prompts, notes, quoted
// files and in-context example pairs, precision notes, and shot options (zero_shot,
// one_shot, few_shot) that list the components of the user prompt in order. The problem's
// facts come from its spec; the hardware from hardware/profiles.toml.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gen/hardware.hpp"
#include "gen/messages.hpp"
#include "gen/problem_facts.hpp"
#include "spec/registry.hpp"

namespace pkb::gen {

struct ExamplePair {
  std::string problem;    // its reference and spec come from the registry
  std::string candidate;  // a path under the root (or absolute)
};

struct Backend {
  std::string key;                               // cuda, cpu, triton, tk
  std::string name;                              // "CUDA C++"
  std::vector<std::string> tags;                 // fence tags, preferred first; tags[0] is asked for
  std::string extension;                         // cu, cpp, py
  std::string shots;                             // the default shot option
  std::string system;                            // the system prompt (a template)
  std::string notes;                             // {backend_notes}
  std::map<std::string, std::string> templates;  // overrides of [templates]
  std::map<std::string, std::string> files;      // {name} -> a file quoted verbatim
  std::vector<ExamplePair> examples;
  // The machine the backend's candidates run on, when it is not a GPU node's: the profile
  // for --hardware auto and when none is given, the W shapes are shown at, the [hardware]
  // template and precision notes (by dtype) that describe it.
  std::string device = "cuda";  // where its candidates run: cuda or cpu
  // pkb: a candidate of pkb's ABI; original: a module in the original ParallelKernelBench's
  // format (solution(*inputs), docs/migrating.md), for problems whose spec says its call.
  std::string format = "pkb";
  std::string hardware;
  int world = 0;
  std::string hardware_template;
  std::map<std::string, std::string> precision_notes;
};

struct ShotOption {
  std::vector<std::string> components;  // [templates] names or computed blocks, in order
  int examples = 0;
};

struct PromptBook {
  std::string path;
  std::string default_backend = "cuda", default_hardware = "none";
  std::map<std::string, std::string> templates;          // [templates]
  std::map<std::string, std::string> files;              // [files]: {name} -> a file quoted verbatim
  std::string hardware_template;                         // [hardware] template: hw_* of a profile
  std::string example_one, example_many, example_entry;  // [examples]
  std::map<std::string, std::string> precision_notes;    // [precision.<dtype>] note
  std::map<std::string, std::string> agent;              // [agent]: pkb agent's templates (agent/book.hpp)
  std::map<std::string, Backend> backends;
  std::map<std::string, ShotOption> shots;

  // Checks every template's placeholders. Throws GenError naming the file and the key.
  static PromptBook load(const std::string& path, const std::vector<spec::HardwareProfile>& profiles);

  const Backend& backend(const std::string& key) const;          // throws GenError listing them
  const ShotOption& shot_option(const std::string& name) const;  // likewise
};

struct PromptRequest {
  const spec::ProblemSpec* problem = nullptr;
  std::string root;                                 // holds reference/, include/, solutions_*/
  std::string backend;                              // "" : the book's default
  std::string shots;                                // "" : the backend's default
  const spec::HardwareProfile* hardware = nullptr;  // nullptr: say nothing about hardware
  std::string detected;                             // what pkb doctor saw, quoted when non-empty
  Setting setting;                                  // W, size, dtype
};

// Throws GenError (missing example or quoted file, unknown shot option, a W the problem
// cannot run with).
Prompt assemble_prompt(const PromptBook& book, const spec::Registry& registry, const PromptRequest& req);

}  // namespace pkb::gen
