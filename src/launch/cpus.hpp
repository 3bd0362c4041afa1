// Which CPU each rank's timed thread runs on. A launch-bound call runs at its host's speed,
// and on a VM one CPU's speed can differ 2x from another's: candidate rank r makes every
// timed call, both sides', on one CPU of its own, and every other thread of it and of its
// judge runs on a second one (the partner), so nothing of pkb's contends with the timed
// thread. Torch-free.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pkb::launch {

struct CpuPlan {
  std::vector<int> timing, partner;  // per rank; empty: nothing pinned
  std::string why_not;               // why nothing is pinned ("" when pinned)
  bool pinned() const { return !timing.empty(); }
  nlohmann::json to_json() const;
};

// Two CPUs a rank, none shared, from `allowed` (the CPUs this process may use), each rank's
// from the CPUs near its GPU first (`near[r]`; empty: no preference), highest-numbered first
// (low CPUs take the system's own work), and none on a core (`siblings[c]`: the CPUs sharing
// CPU c's core) whose other hardware thread is taken while a CPU on a core of its own is left:
// a judge's partner thread on the timing CPU's sibling would slow its candidate's calls.
// `spare` CPUs stay free for the parent and the rest.
CpuPlan plan_cpus(int world, const std::vector<int>& allowed, const std::vector<std::vector<int>>& near, int spare,
                  const std::map<int, std::vector<int>>& siblings = {});

// Each of `cpus`' hardware-thread siblings (itself included), where the system says.
std::map<int, std::vector<int>> smt_siblings(const std::vector<int>& cpus);

// "0-3,8,10-11" (the kernel's cpulist format) as a sorted list; throws std::invalid_argument.
std::vector<int> parse_cpu_list(const std::string& list);

// The CPUs this process may run on.
std::vector<int> allowed_cpus();

// The CPUs local to a PCI device ("0000:18:00.0", as CUDA names it), or none where the
// system does not say.
std::vector<int> cpus_near_pci(const std::string& pci_bus_id);

// Pins the calling thread (only it; threads it starts later inherit the CPU) to `cpu`; -1
// does nothing. Returns false where the system refused.
bool pin_thread(int cpu);

// Whether this CPU has bf16 instructions (x86's avx512_bf16 or amx_bf16, Arm's bf16), from
// /proc/cpuinfo; nullopt where it does not say. Without them ATen's bf16 work runs far slower
// than float32 (265-300x on an AVX2-only EPYC: bench/results/cpu_same_code.md).
std::optional<bool> cpu_has_bf16();

}  // namespace pkb::launch
