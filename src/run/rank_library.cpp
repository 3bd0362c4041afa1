#include "run/rank_library.hpp"

#include <dlfcn.h>

#include <filesystem>

#include "io/elf.hpp"
#include "io/input_error.hpp"
#include "launch/subprocess.hpp"

namespace pkb::run {

std::string rank_library_path() {
  return (std::filesystem::path(launch::self_exe()).parent_path() / "libpkb_rank.so").string();
}

const worker::RankEntry& rank_library() {
  static const worker::RankEntry* entry = [] {
    std::string path = rank_library_path();
    const std::string fix = "; rebuild pkb (scripts/build.sh), which puts it beside the binary";
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw io::InputError("cannot load the rank library " + path + ": " + dlerror() + fix);
    auto get = reinterpret_cast<const worker::RankEntry* (*)()>(dlsym(lib, "pkb_rank_entry"));
    const worker::RankEntry* e = get ? get() : nullptr;
    if (!e || e->abi != worker::kRankEntryAbi)
      throw io::InputError("the rank library " + path + " comes from another build of pkb" + fix);
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

}  // namespace pkb::run
