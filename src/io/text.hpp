// Small text helpers every layer uses: numbers in a printf format, the nearest word for
// "did you mean" hints, and percent-encoding for URL paths.
#pragma once

#include <string>
#include <vector>

namespace pkb::io {

// `v` printed with `spec`, a printf format for one double ("%.1f", "%g").
std::string format(const char* spec, double v);

// Of `candidates`, the one closest to `word` by edit distance, or "" when none is near.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

// `path` with every byte outside [A-Za-z0-9/._~-] percent-encoded.
std::string percent_encode(const std::string& path);

}  // namespace pkb::io
