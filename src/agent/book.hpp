// The texts of `pkb agent` (prompts.toml's [agent] section): what follows the prompt on the
// first turn, and the feedback of every later turn, one template per outcome. Every
// template may use every value (agent/feedback.hpp fills them all); a name outside them, or
// a missing template, fails at load naming the key.
#pragma once

#include <map>
#include <set>
#include <string>

#include "gen/prompt.hpp"
#include "gen/template.hpp"

namespace pkb::agent {

// The values every [agent] template may use.
const std::set<std::string>& template_values();

struct Book {
  std::string path;
  std::map<std::string, std::string> templates;  // intro, feedback, correct, wrong, ..., show, shapes, best, no_best

  // From a loaded prompt book. Throws gen::GenError naming the file and key.
  static Book from(const gen::PromptBook& prompts);

  // The template `name` rendered; blank runs of lines squeezed to one, ends trimmed.
  std::string render(const std::string& name, const gen::Context& values) const;
};

}  // namespace pkb::agent
