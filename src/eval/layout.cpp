#include "eval/layout.hpp"

#include <algorithm>

namespace pkb::eval {

namespace {

size_t round_up(size_t n) { return (std::max<size_t>(n, 1) + kSlotAlign - 1) / kSlotAlign * kSlotAlign; }

// The most bytes any rank needs for `t`.
size_t largest_bytes(const spec::ProblemSpec& s, const spec::TensorSpec& t, const std::string& size, int world,
                     const std::string& dt) {
  size_t most = 0;
  for (int q = 0; q < world; ++q) most = std::max(most, spec::bytes_of(t, s.vars_for(size, world, q), dt));
  return round_up(most);
}

}  // namespace

HarnessLayout plan_harness(const spec::ProblemSpec& s, const std::string& size, int world, const std::string& dt) {
  HarnessLayout l;
  l.set_device = kGateBytes;
  auto place = [&](const spec::TensorSpec& t) {
    Slot slot;
    slot.bytes = largest_bytes(s, t, size, world, dt);
    slot.host = t.host;
    size_t& end = t.host ? l.set_host : l.set_device;
    slot.offset = end;
    end += slot.bytes;
    return slot;
  };
  for (auto& t : s.inputs) l.in.push_back(place(t));
  for (auto& t : s.outputs) {
    l.out.push_back(place(t));
    (t.host ? l.out_host : l.out_device) += l.out.back().bytes;
  }
  return l;
}

int captures_for(size_t output_bytes, size_t budget, int iters, int floor) {
  size_t fit = budget / std::max<size_t>(output_bytes, 1);
  int n = static_cast<int>(std::min<size_t>(fit, static_cast<size_t>(iters)));
  return std::max(n, std::min(iters, floor));
}

}  // namespace pkb::eval
