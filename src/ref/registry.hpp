// The references compiled into pkb (reference/*.cpp) and loaded from reference libraries
// (--reference-lib), by slug. This header is torch-free: the parent uses it to check the
// problem registry.
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
