// The entry points of a rank process (`pkb __worker`, or forked by `pkb __fork_server`);
// see worker.cpp.
#pragma once

namespace pkb::worker {

int worker_main();

// `pkb __fork_server [--python]` (launch/fork_server.hpp): serves forks, then, in each forked
// child, runs the rank. With `python` (a .py candidate's ranks) it first imports torch once
// for all of them.
int fork_server_main(bool python);

}  // namespace pkb::worker
