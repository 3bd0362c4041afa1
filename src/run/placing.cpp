#include "run/placing.hpp"

#include <random>

#include "io/input_error.hpp"

namespace pkb::run {

WorldFit fit_world(const std::vector<const spec::ProblemSpec*>& problems, int world, const std::string& size) {
  WorldFit f;
  for (auto* s : problems) {
    std::string err = s->world_size_error(world, size);
    if (err.empty()) f.fit.push_back(s);
    else f.unfit.emplace_back(s, err);
  }
  return f;
}

const spec::ProblemSpec* slowest_of(const std::vector<const spec::ProblemSpec*>& problems) {
  const spec::ProblemSpec* slowest = problems.empty() ? nullptr : problems.front();
  for (auto* s : problems)
    if (s->trial_timeout_s > slowest->trial_timeout_s) slowest = s;
  return slowest;
}

const spec::HardwareProfile* hardware_for(const std::string& profiles_path, const std::string& wanted,
                                          const launch::Placement& p, std::vector<spec::HardwareProfile>& store) {
  store = spec::load_profiles(profiles_path);
  if (wanted != "auto") {
    auto* hw = spec::find_profile(store, wanted);
    if (!hw) throw io::InputError(spec::unknown_profile_message(store, wanted) + ", or auto");
    return hw;
  }
  return spec::pick_profile(store, p.device == launch::Device::cpu ? "cpu" : p.gpu_name, p.gpus);
}

uint64_t make_seed(const std::string& given) {
  if (!given.empty()) {
    try {
      size_t used = 0;
      uint64_t s = std::stoull(given, &used, 0);
      if (used == given.size()) return s;
    } catch (...) {
    }
    throw io::InputError("--seed takes a whole number, not '" + given + "'");
  }
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace pkb::run
