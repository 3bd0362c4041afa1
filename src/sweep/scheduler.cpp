#include "sweep/scheduler.hpp"

#include <algorithm>
#include <stdexcept>

namespace pkb::sweep {

Packer::Packer(std::vector<int> gpus, int most_at_once)
    : cpu_(gpus.empty()),
      most_at_once_(static_cast<size_t>(std::max(1, most_at_once))),
      node_gpus_(gpus.size()),
      free_(gpus.begin(), gpus.end()) {}

std::vector<Assignment> Packer::assign(const std::vector<Waiting>& waiting) {
  std::vector<Assignment> out;
  for (const Waiting& w : waiting) {
    if (running_.size() >= most_at_once_) break;
    if (running_.count(w.id)) throw std::logic_error("evaluation " + std::to_string(w.id) + " is already running");
    size_t need = cpu_ ? 0 : std::min(static_cast<size_t>(std::max(1, w.world)), node_gpus_);
    if (need > free_.size()) break;
    Assignment a{w.id, {}};
    for (auto it = free_.begin(); a.gpus.size() < need;) {  // the lowest free indices
      a.gpus.push_back(*it);
      it = free_.erase(it);
    }
    running_[w.id] = a;
    out.push_back(std::move(a));
  }
  return out;
}

void Packer::finished(size_t id) {
  auto it = running_.find(id);
  if (it == running_.end()) throw std::logic_error("evaluation " + std::to_string(id) + " is not running");
  free_.insert(it->second.gpus.begin(), it->second.gpus.end());
  running_.erase(it);
}

std::vector<Waiting> largest_first(std::vector<Waiting> waiting) {
  std::stable_sort(waiting.begin(), waiting.end(), [](const Waiting& a, const Waiting& b) { return a.world > b.world; });
  return waiting;
}

int evaluations_at_once(const std::string& setting, int gpus, int cores, int largest_world) {
  if (setting == "auto") return gpus > 0 ? gpus : std::max(1, cores / std::max(1, largest_world));
  size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(setting, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != setting.size() || n < 1)
    throw std::invalid_argument("--parallel takes a number of evaluations at once (1 or more) or auto, not '" +
                                setting + "'");
  return n;
}

std::vector<std::string> visible_gpu_names(const char* visible, int gpus) {
  std::vector<std::string> names;
  if (visible && *visible) {
    std::string text = visible;
    for (size_t at = 0; at <= text.size();) {
      size_t comma = std::min(text.find(',', at), text.size());
      std::string entry = text.substr(at, comma - at);
      entry.erase(0, entry.find_first_not_of(" \t"));
      entry.erase(entry.find_last_not_of(" \t") + 1);
      if (!entry.empty()) names.push_back(entry);
      at = comma + 1;
    }
  }
  // Fewer entries than the GPUs the probe saw cannot be told apart: name them by index.
  if (static_cast<int>(names.size()) < gpus) {
    names.clear();
    for (int i = 0; i < gpus; ++i) names.push_back(std::to_string(i));
  }
  names.resize(static_cast<size_t>(std::max(0, gpus)));
  return names;
}

}  // namespace pkb::sweep
