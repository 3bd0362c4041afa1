// Where pkb's own buffers sit in a candidate rank's memory: the gate's flags (jobs/gate.hpp)
// and one set of the problem's inputs and outputs (the candidate reads and writes them;
// the judge rank fills the inputs before every call and copies the outputs out as each
// call ends, into memory of its own the candidate never maps). Device tensors live in the
// harness part of the symmetric heap, host-declared ones in a shared host region; a
// candidate rank and its judge compute the same layout and address both by these offsets.
// Every rank uses the same layout (the largest size any rank needs), so a tensor sits at
// the same heap offset on every rank. Torch-free: the memory plan uses it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace pkb::eval {

inline constexpr size_t kSlotAlign = 256;

struct Slot {
  size_t offset = 0;  // in its region (device or host), within the set
  size_t bytes = 0;   // the largest any rank needs, rounded up to kSlotAlign (at least one)
  bool host = false;
};

// The gate's flags at the start of the device region, each on a line of its own: the
// judge writes `go`, the candidate rank writes `ready` and `done` (jobs/gate.hpp).
inline constexpr size_t kGateGo = 0, kGateReady = 128, kGateDone = 256, kGateBytes = 512;

struct HarnessLayout {
  std::vector<Slot> in, out;
  size_t set_device = 0, set_host = 0;  // the regions: the gate (device), then one set of inputs and outputs
  size_t out_device = 0, out_host = 0;  // one copy of the outputs, by region: what a judge's capture holds

  size_t device_bytes() const { return set_device; }
  size_t host_bytes() const { return set_host; }
  size_t output_bytes() const { return out_device + out_host; }  // what one capture holds
};

// The layout of `spec` at `size` on `world` ranks with `dt` for its "dt" tensors. Throws
// spec::SpecError / std::invalid_argument for sizes the spec's formulas reject.
HarnessLayout plan_harness(const spec::ProblemSpec& spec, const std::string& size, int world, const std::string& dt);

// How many timed calls' outputs are captured: all `iters` when `budget` bytes hold them,
// else as many as fit but never fewer than min(iters, floor) (a secret sample of the calls).
int captures_for(size_t output_bytes, size_t budget, int iters, int floor);

}  // namespace pkb::eval
