// The references compiled into pkb (reference/*.cpp) and loaded from reference libraries
// (--reference-lib). This header is torch-free: the parent uses it to check the registry.
#pragma once

#include <string>
#include <vector>

namespace pkb::worker {

std::vector<std::string> reference_slugs();
bool has_reference(const std::string& slug);
// dlopens a shared object whose PKB_REFERENCE registrations add references. Throws.
void load_reference_library(const std::string& path);

}  // namespace pkb::worker
