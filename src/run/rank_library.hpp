// The rank library (libpkb_rank.so, beside the pkb binary; ranklib/entry.hpp) from the
// parent's side: where it is, which references it holds, and, in the processes that run
// torch, its entry points.
#pragma once

#include <string>
#include <vector>

#include "ranklib/entry.hpp"

namespace pkb::run {

// Loaded on first use, RTLD_GLOBAL: reference libraries, candidates built against libtorch
// and the Python plugin resolve pkb's functions against it. Throws io::InputError naming
// the fix when it is missing, does not load, or comes from another build.
const ranklib::RankEntry& rank_library();

// The slugs of the references a shared object holds, read from its file's `pkb_references`
// section (PKB_REFERENCE, include/pkb/reference.hpp) without loading it. Throws
// io::InputError when it cannot be read or holds none.
std::vector<std::string> reference_slugs_in(const std::string& library);

// The compiled-in references: those of the rank library, which it need not load to say.
// Throws io::InputError naming the fix where the library is missing.
std::vector<std::string> compiled_reference_slugs();

}  // namespace pkb::run
