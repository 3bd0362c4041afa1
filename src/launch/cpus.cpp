#include "launch/cpus.hpp"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace pkb::launch {

nlohmann::json CpuPlan::to_json() const {
  if (!pinned()) return {{"pinned", false}, {"why_not", why_not}};
  return {{"pinned", true}, {"timing", timing}, {"partner", partner}};
}

CpuPlan plan_cpus(int world, const std::vector<int>& allowed, const std::vector<std::vector<int>>& near, int spare,
                  const std::map<int, std::vector<int>>& siblings) {
  CpuPlan plan;
  std::set<int> free(allowed.begin(), allowed.end()), shadowed;  // shadowed: a sibling is taken
  const int need = 2 * world + spare;
  if (static_cast<int>(free.size()) < need) {
    plan.why_not = std::to_string(free.size()) + " CPU(s) allowed, " + std::to_string(need) + " needed (two a rank" +
                   (spare ? " and " + std::to_string(spare) + " for the rest)" : ")");
    return plan;
  }
  auto claim = [&](int cpu) {
    free.erase(cpu);
    if (auto it = siblings.find(cpu); it != siblings.end())
      for (int s : it->second)
        if (s != cpu) shadowed.insert(s);
    return cpu;
  };
  // Near the rank's GPU before any other, a core of its own before a shared one, highest first.
  auto take = [&](int r) {
    for (bool alone : {true, false}) {
      if (r < static_cast<int>(near.size()))
        for (auto it = near[r].rbegin(); it != near[r].rend(); ++it)
          if (free.count(*it) && (!alone || !shadowed.count(*it))) return claim(*it);
      for (auto it = free.rbegin(); it != free.rend(); ++it)
        if (!alone || !shadowed.count(*it)) return claim(*it);
    }
    return claim(*free.rbegin());  // not reached: `free` holds enough
  };
  for (int r = 0; r < world; ++r) {
    plan.timing.push_back(take(r));
    plan.partner.push_back(take(r));
  }
  return plan;
}

std::map<int, std::vector<int>> smt_siblings(const std::vector<int>& cpus) {
  std::map<int, std::vector<int>> out;
  for (int c : cpus) {
    std::ifstream f("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/thread_siblings_list");
    std::string line;
    if (!f || !std::getline(f, line)) continue;
    try {
      out[c] = parse_cpu_list(line);
    } catch (const std::invalid_argument&) {
    }
  }
  return out;
}

std::vector<int> parse_cpu_list(const std::string& list) {
  std::set<int> cpus;
  size_t i = 0;
  auto number = [&] {
    size_t j = i;
    while (j < list.size() && std::isdigit(static_cast<unsigned char>(list[j]))) ++j;
    if (j == i || j - i > 5) throw std::invalid_argument("not a CPU list: '" + list + "'");  // CPU ids stay < 100000
    int v = std::stoi(list.substr(i, j - i));
    i = j;
    return v;
  };
  while (i < list.size() && !std::isspace(static_cast<unsigned char>(list[i]))) {
    int a = number(), b = a;
    if (i < list.size() && list[i] == '-') {
      ++i;
      b = number();
    }
    if (b < a) throw std::invalid_argument("not a CPU list: '" + list + "'");
    for (int c = a; c <= b; ++c) cpus.insert(c);
    if (i < list.size() && list[i] == ',') ++i;
  }
  return {cpus.begin(), cpus.end()};
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::vector<int> cpus_near_pci(const std::string& pci_bus_id) {
  std::string id = pci_bus_id;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  // CUDA may give an eight-digit domain ("00000000:18:00.0"); sysfs has four.
  if (size_t colon = id.find(':'); colon != std::string::npos && colon > 4) id = id.substr(colon - 4);
  std::ifstream f("/sys/bus/pci/devices/" + id + "/local_cpulist");
  std::string line;
  if (!f || !std::getline(f, line)) return {};
  try {
    return parse_cpu_list(line);
  } catch (const std::invalid_argument&) {
    return {};
  }
}

bool pin_thread(int cpu) {
  if (cpu < 0) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

std::optional<bool> cpu_has_bf16() {
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
    std::stringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;)
      if (w == "avx512_bf16" || w == "amx_bf16" || w == "bf16") return true;
    return false;
  }
  return std::nullopt;
}

}  // namespace pkb::launch
