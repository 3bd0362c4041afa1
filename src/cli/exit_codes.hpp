// pkb's exit codes: scripts and sweeps tell verdicts apart by them (docs/cli.md).
#pragma once

namespace pkb::cli {

enum Exit : int {
  kOk = 0,
  kWrong = 1,          // wrong output
  kUsage = 2,          // bad command line, unknown problem, malformed spec
  kCompileError = 3,   // the candidate does not build or lacks an entry point
  kCrash = 4,          // a rank died (signal, non-zero exit, CUDA error)
  kTimeout = 5,        // a phase overran its deadline
  kIntegrity = 6,      // the candidate cheated (mutated inputs, escaped the timer, ...)
  kInternal = 7,       // pkb itself failed (bootstrap, I/O)
  kInterrupted = 130,  // Ctrl-C
};

}  // namespace pkb::cli
