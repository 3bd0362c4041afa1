// A rank: `pkb __worker`, started by the parent (launch/group.cpp). It asks the parent for
// its job over the bootstrap channel, sets up its device, communicator and symmetric
// heap, and runs the job (src/jobs/). Every failure is sent to the parent as an Error
// event before the rank exits non-zero, so the parent can say what happened where.
#include "worker/worker.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "device/device.hpp"
#include "jobs/jobs.hpp"
#include "launch/client.hpp"
#include "launch/phases.hpp"
#include "rank/rank.hpp"
#include "worker/crash_report.hpp"

namespace pkb::worker {

int worker_main() {
  launch::Client* client = nullptr;
  // Declared outside the try: the error must reach the parent while the communicator is
  // still up, or peers would report the closed connection first and take the blame.
  std::unique_ptr<rank::Rank> r;
  report_fatal_signals();
  try {
    client = &launch::Client::from_env();
    int rank = std::atoi(std::getenv("PKB_RANK") ? std::getenv("PKB_RANK") : "0");
    rank::Job job = rank::job_from_json(nlohmann::json::parse(client->hello(rank)));
    jobs::before_setup(job, *client);
    client->phase(launch::phase::kInit);
    r = std::make_unique<rank::Rank>(*client, job);
    nlohmann::json result = jobs::run_job(*r);
    result["rank"] = r->rank;
    client->phase(launch::phase::kFinish);
    device::synchronize(r->device);
    client->result(result.dump());
    // No teardown: the process ends here and the driver frees what it held. Destroying an
    // NCCL communicator inside the sandbox would need connections the sandbox denies, and a
    // candidate's threads may still hold pointers into what destructors would free.
    fflush(nullptr);
    std::_Exit(0);
  } catch (const std::exception& e) {
    auto* typed = dynamic_cast<const rank::RankError*>(&e);
    std::cerr << "pkb rank error: " << e.what() << std::endl;
    if (client) {
      try {
        client->error(rank::error_kind_name(typed ? typed->kind : rank::ErrorKind::error), e.what());
      } catch (...) {
      }
    }
    // No destructors: tearing down a communicator whose peers are gone can hang.
    std::_Exit(1);
  }
}

int fork_server_main(bool python) {
  launch::serve_forks(jobs::before_forks(python));  // returns in each forked rank only
  return worker_main();
}

}  // namespace pkb::worker
