// What the rank library (libpkb_rank.so: libtorch, the references, a rank's jobs) offers the
// pkb binary. The binary does not link libtorch: only the processes that run torch (a rank,
// the ranks' fork server, the device probe, pkb compare, the parent checking a
// --reference-lib) load the library (run/rank_library.hpp), so every other command starts
// without libtorch's static initialisers (~0.6 CPU-s a process). Torch-free.
#pragma once

#include <functional>
#include <string>
#include <utility>

// Named, not included: the binary's side reads this header (run/rank_library.hpp) and only
// pkb compare, which includes eval/compare_dirs.hpp, needs the report's fields.
namespace pkb::eval {
struct DirReport;
}

namespace pkb::ranklib {

// Raised with any change to RankEntry: a library from another build is refused by name.
constexpr int kRankEntryAbi = 2;

struct RankEntry {
  int abi;
  int (*worker_main)();                   // pkb __worker
  int (*fork_server_main)(bool python);   // pkb __fork_server [--python]
  std::string (*probe_json)();            // pkb __probe
  eval::DirReport (*compare_dirs)(const std::string& a, const std::string& b,
                                  const std::function<std::pair<double, double>(size_t, const std::string&)>& tolerance);
  void (*load_reference_library)(const std::string& path);  // --reference-lib; throws, naming it
};

}  // namespace pkb::ranklib

// The library's one entry point, found by name.
extern "C" const pkb::ranklib::RankEntry* pkb_rank_entry();
