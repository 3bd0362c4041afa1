// A rank that dies of a fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE) first writes where, on
// stderr, which the parent keeps as the rank's last lines: the frames as library+offset
// (resolvable with addr2line against the same build) and the symbol where one is exported.
// Then it dies of the same signal, so the parent's verdict (crash, "killed by signal 11")
// is the one it would be without this.
#pragma once

namespace pkb::worker {

void report_fatal_signals();

}  // namespace pkb::worker
