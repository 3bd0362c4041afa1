// Where pkb's own buffers sit in a candidate rank's memory: one set of the problem's inputs
// and outputs (the candidate reads and writes them; the judge rank fills the inputs before
// every call) and the captures of outputs taken as calls end (the judge reads them). Device
// tensors live in the harness part of the symmetric heap, host-declared ones in a shared
// host region; a candidate rank and its judge compute the same layout and address both by
// these offsets. Every rank uses the same layout (the largest size any rank needs), so a
// tensor sits at the same heap offset on every rank. Torch-free: the memory plan uses it.
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

struct HarnessLayout {
  std::vector<Slot> in, out;
  std::vector<size_t> capture_offset;  // per output: its offset within one capture, in its region
  size_t set_device = 0, set_host = 0;          // one set of inputs and outputs, by region
  size_t capture_device = 0, capture_host = 0;  // one capture of the outputs, by region
  int captures = 0;

  // The region sizes: the set, then `captures` captures one after another.
  size_t device_bytes() const { return set_device + captures * capture_device; }
  size_t host_bytes() const { return set_host + captures * capture_host; }
  // Output i's bytes in capture k, in its region.
  size_t capture_at(int k, size_t i) const {
    return (out.at(i).host ? set_host + k * capture_host : set_device + k * capture_device) + capture_offset.at(i);
  }
  size_t output_bytes() const { return capture_device + capture_host; }  // what one capture holds
};

// The layout of `spec` at `size` on `world` ranks with `dt` for its "dt" tensors and
// `captures` capture slots. Throws spec::SpecError / std::invalid_argument for sizes the
// spec's formulas reject.
HarnessLayout plan_harness(const spec::ProblemSpec& spec, const std::string& size, int world, const std::string& dt,
                           int captures);

// How many timed calls' outputs are captured: all `iters` when `budget` bytes hold them,
// else as many as fit but never fewer than min(iters, floor) (a secret sample of the calls).
int captures_for(size_t output_bytes, size_t budget, int iters, int floor);

}  // namespace pkb::eval
