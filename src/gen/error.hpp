// Errors of pkb generate that the user fixes (a malformed prompts.toml or models.toml, an
// unknown model, a missing key variable): what() is one line naming the fix.
#pragma once

#include "io/input_error.hpp"

namespace pkb::gen {

struct GenError : io::InputError {
  using io::InputError::InputError;
};

}  // namespace pkb::gen
