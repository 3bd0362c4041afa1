// Time since a steady-clock point, in the units the callers report. Torch-free.
#pragma once

#include <chrono>

namespace pkb::io {

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
inline double ms_since(std::chrono::steady_clock::time_point t) { return 1e3 * seconds_since(t); }

}  // namespace pkb::io
