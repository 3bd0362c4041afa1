// Reading TOML files for specs and profiles, with syntax errors as SpecError.
#pragma once

#include <string>

#include <toml++/toml.h>

namespace pkb::spec {

// A syntax error throws SpecError "file:line: malformed TOML: ...".
toml::table parse_toml(const std::string& path);

}  // namespace pkb::spec
