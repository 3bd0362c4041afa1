// Bad input from the user (a spec, a TOML file, a value on the command line): what() is
// one line naming the file or value and the fix. Commands print it and exit 2.
#pragma once

#include <stdexcept>

namespace pkb::io {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace pkb::io
