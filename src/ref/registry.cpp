#include "ref/registry.hpp"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <stdexcept>

#include "pkb/reference.hpp"

namespace pkb {

namespace {
std::map<std::string, ReferenceFactory>& table() {
  static std::map<std::string, ReferenceFactory> t;
  return t;
}
}  // namespace

bool register_reference(const char* slug, ReferenceFactory factory) {
  if (!table().emplace(slug, factory).second)
    throw std::logic_error(std::string("two references registered as ") + slug);
  return true;
}

namespace ref {

std::vector<std::string> reference_slugs() {
  std::vector<std::string> out;
  for (auto& [slug, f] : table()) out.push_back(slug);
  return out;
}

bool has_reference(const std::string& slug) { return table().count(slug) > 0; }

void load_reference_library(const std::string& path) {
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL))
    throw std::runtime_error("cannot load reference library " + path + ": " + dlerror());
}

std::unique_ptr<Reference> create_reference(const std::string& slug) {
  auto it = table().find(slug);
  if (it == table().end()) throw std::runtime_error("no reference compiled in for " + slug);
  return it->second();
}

}  // namespace ref
}  // namespace pkb
