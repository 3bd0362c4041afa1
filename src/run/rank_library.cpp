#include "run/rank_library.hpp"

#include <dlfcn.h>

#include <filesystem>

#include "io/elf.hpp"
#include "io/input_error.hpp"
#include "launch/subprocess.hpp"

namespace pkb::run {

namespace {

const char kRebuild[] = "; rebuild pkb (scripts/build.sh), which puts it beside the binary";

std::string rank_library_path() {
  return (std::filesystem::path(launch::self_exe()).parent_path() / "libpkb_rank.so").string();
}

}  // namespace

const ranklib::RankEntry& rank_library() {
  static const ranklib::RankEntry* entry = [] {
    std::string path = rank_library_path();
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw io::InputError("cannot load the rank library " + path + ": " + dlerror() + kRebuild);
    auto get = reinterpret_cast<const ranklib::RankEntry* (*)()>(dlsym(lib, "pkb_rank_entry"));
    const ranklib::RankEntry* e = get ? get() : nullptr;
    if (!e || e->abi != ranklib::kRankEntryAbi)
      throw io::InputError("the rank library " + path + " comes from another build of pkb" + kRebuild);
    return e;
  }();
  return *entry;
}

std::vector<std::string> reference_slugs_in(const std::string& library) {
  std::vector<std::string> slugs = io::elf_section_strings(library, "pkb_references");
  if (slugs.empty())
    throw io::InputError(library + ": holds no pkb reference (no PKB_REFERENCE of include/pkb/reference.hpp)");
  return slugs;
}

std::vector<std::string> compiled_reference_slugs() {
  std::string path = rank_library_path();
  if (!std::filesystem::exists(path)) throw io::InputError("the rank library " + path + " is missing" + kRebuild);
  return reference_slugs_in(path);
}

}  // namespace pkb::run
