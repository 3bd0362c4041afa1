// The references compiled into the rank library (reference/*.cpp) and loaded from reference
// libraries (--reference-lib), by slug, in a rank. (The parent reads the slugs from the
// libraries' files instead: run/rank_library.hpp.)
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace pkb {
class Reference;
}

namespace pkb::ref {

std::vector<std::string> reference_slugs();
bool has_reference(const std::string& slug);
// dlopens a shared object whose PKB_REFERENCE registrations add references. Throws.
void load_reference_library(const std::string& path);
// A new instance of the reference registered as `slug`. Throws.
std::unique_ptr<Reference> create_reference(const std::string& slug);

}  // namespace pkb::ref
