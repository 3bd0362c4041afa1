// The rank library's one exported symbol: the rank modes, the device probe, pkb compare's
// comparison and the reference-library loader, each from the folder that owns it.
#include "ranklib/entry.hpp"

#include "device/probe.hpp"
#include "eval/compare_dirs.hpp"
#include "ref/registry.hpp"
#include "worker/worker.hpp"

extern "C" __attribute__((visibility("default"))) const pkb::ranklib::RankEntry* pkb_rank_entry() {
  static const pkb::ranklib::RankEntry entry{pkb::ranklib::kRankEntryAbi, &pkb::worker::worker_main,
                                             &pkb::worker::fork_server_main, &pkb::device::probe_json,
                                             &pkb::eval::compare_dirs, &pkb::ref::load_reference_library};
  return &entry;
}
