// Whole files in and out, the same everywhere in pkb.
#pragma once

#include <string>

namespace pkb::io {

// The file's bytes. Throws std::runtime_error naming the path when it cannot be read.
std::string read_file(const std::string& path);

// Writes a sibling temporary file and renames it over `path` (creating folders): readers
// see the old contents or the new, never half a file.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace pkb::io
