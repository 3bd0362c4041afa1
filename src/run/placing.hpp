// What the parent decides about a run before its ranks start: which problems a world size
// fits, the hardware profile its roofline is drawn against, its secret seed. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "launch/placement.hpp"
#include "spec/hardware.hpp"
#include "spec/spec.hpp"

namespace pkb::run {

// Problems that run in turn on one set of ranks, split by whether `world` fits them (with
// the reason where it does not).
struct WorldFit {
  std::vector<const spec::ProblemSpec*> fit;
  std::vector<std::pair<const spec::ProblemSpec*, std::string>> unfit;
};
WorldFit fit_world(const std::vector<const spec::ProblemSpec*>& problems, int world, const std::string& size);

// Of problems that run on one set of ranks, the one whose deadlines the ranks get (the most
// generous trial deadline).
const spec::ProblemSpec* slowest_of(const std::vector<const spec::ProblemSpec*>& problems);

// The hardware profile a run's roofline uses: `wanted` by name, or "auto": the one that
// fits the placed GPUs (none for the CPU device). `store` holds the profiles read from
// `profiles_path`. Throws io::InputError for an unknown name.
const spec::HardwareProfile* hardware_for(const std::string& profiles_path, const std::string& wanted,
                                          const launch::Placement& p, std::vector<spec::HardwareProfile>& store);

// A fresh secret seed from the kernel, or the user's (`given`, decimal or 0x hex). Throws
// io::InputError for anything else.
uint64_t make_seed(const std::string& given);

}  // namespace pkb::run
