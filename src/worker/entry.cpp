#include "worker/entry.hpp"

#include "device/probe.hpp"
#include "eval/compare_dirs.hpp"
#include "ref/registry.hpp"
#include "worker/worker.hpp"

extern "C" __attribute__((visibility("default"))) const pkb::worker::RankEntry* pkb_rank_entry() {
  static const pkb::worker::RankEntry entry{pkb::worker::kRankEntryAbi, &pkb::worker::worker_main,
                                            &pkb::worker::fork_server_main, &pkb::device::probe_json,
                                            &pkb::eval::compare_dirs, &pkb::ref::load_reference_library};
  return &entry;
}
