// The rank library (libpkb_rank.so, beside the pkb binary; worker/entry.hpp) from the
// parent's side: where it is, which references it holds, and, in the processes that run
// torch, its entry points.
#pragma once

#include <string>
#include <vector>

#include "worker/entry.hpp"

namespace pkb::run {

std::string rank_library_path();

// Loaded on first use, RTLD_GLOBAL: reference libraries, candidates built against libtorch
// and the Python plugin resolve pkb's functions against it. Throws io::InputError naming
// the fix when it is missing, does not load, or comes from another build.
const worker::RankEntry& rank_library();

// The slugs of the references a shared object holds (the compiled-in ones: those of
// rank_library_path()), read from its file's `pkb_references` section (PKB_REFERENCE,
// include/pkb/reference.hpp) without loading it. Throws io::InputError when it holds none.
std::vector<std::string> reference_slugs_in(const std::string& library);

}  // namespace pkb::run
