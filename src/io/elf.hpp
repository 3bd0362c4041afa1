// One section of a shared object, read from its file without loading it.
#pragma once

#include <string>
#include <vector>

namespace pkb::io {

// The NUL-separated strings in section `name` of the 64-bit ELF file at `path` (empty ones
// left out; none when the file has no such section). Throws InputError naming the path when
// it cannot be read or is not such a file.
std::vector<std::string> elf_section_strings(const std::string& path, const std::string& name);

}  // namespace pkb::io
