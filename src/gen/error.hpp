// Errors of pkb generate that the user fixes (a malformed prompts.toml or models.toml, an
// unknown model, a missing key variable): what() is one line naming the fix.
#pragma once

#include <stdexcept>

namespace pkb::gen {

struct GenError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace pkb::gen
