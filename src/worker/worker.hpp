// The entry point of a rank process (`pkb __worker`); see worker.cpp.
#pragma once

namespace pkb::worker {

int worker_main();

}  // namespace pkb::worker
