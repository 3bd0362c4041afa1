#include "launch/placement.hpp"

#include <algorithm>
#include <cstdlib>

#include <unistd.h>

#include "io/input_error.hpp"
#include "launch/phases.hpp"
#include "launch/subprocess.hpp"

namespace pkb::launch {

using json = nlohmann::json;

json probe_devices() {
  // Without the NVIDIA driver there is nothing to probe, and no point starting CUDA.
  if (access("/dev/nvidiactl", F_OK) != 0 && access("/proc/driver/nvidia", F_OK) != 0)
    return json{{"cuda_built", true}, {"devices", json::array()}, {"note", "no NVIDIA driver"}};
  ProcessResult r = run_process({self_exe(), "__probe"}, 120);
  json j = json::parse(r.out, nullptr, false);
  if (!r.ok() || j.is_discarded())
    return json{{"devices", json::array()}, {"error", "device probe failed: " + r.err.substr(0, 400)}};
  return j;
}

namespace {

void place_on_gpus(const PlaceRequest& req, Placement& p) {
  int k = req.ranks_per_gpu ? req.ranks_per_gpu : 1;
  p.world = req.world ? req.world : p.gpus * k;
  if (!req.ranks_per_gpu && p.world > p.gpus) k = (p.world + p.gpus - 1) / p.gpus;
  if (p.world > p.gpus * k)
    throw io::InputError("W=" + std::to_string(p.world) + " ranks do not fit " + std::to_string(p.gpus) +
                         " GPU(s) at " + std::to_string(k) + " per GPU; raise --ranks-per-gpu");
  p.ranks_per_gpu = k;
  // NCCL refuses two ranks on one GPU; shared memory (through the host) does not mind.
  p.comm = k > 1 ? (req.ref_comm == "gloo" ? Comm::gloo : Comm::shm) : Comm::nccl;
  if (k == 1 && !req.mps) return;
  if (k > 1)
    p.warnings.push_back(std::to_string(k) + " ranks share each GPU: the reference communicates through " +
                         std::string(name(p.comm)) + " and timings mean nothing");
  if (req.no_mps) {
    p.warnings.push_back("MPS is off (--no-mps): device barriers between co-resident ranks take milliseconds");
    return;
  }
  std::string why;
  p.mps = MpsDaemon::start(why);
  if (p.mps) {
    for (auto& kv : p.mps->env()) p.env.push_back(kv);
  } else {
    p.warnings.push_back("no private MPS daemon (" + why + "): device barriers between co-resident ranks take milliseconds");
  }
}

// The CPUs pinning may take: this process's, or those of them --cpus names.
std::vector<int> pinnable_cpus(const std::string& cpus) {
  std::vector<int> allowed = allowed_cpus();
  if (cpus.empty()) return allowed;
  std::vector<int> given;
  try {
    given = parse_cpu_list(cpus);
  } catch (const std::invalid_argument&) {
    throw io::InputError("--cpus " + cpus + ": not a CPU list; give one as 0-7,16-23");
  }
  std::vector<int> both;
  for (int c : given)
    if (std::find(allowed.begin(), allowed.end(), c) != allowed.end()) both.push_back(c);
  if (both.empty()) throw io::InputError("--cpus " + cpus + ": none of these CPUs is allowed to this process");
  return both;
}

// The timed threads' CPUs: near each rank's GPU where the system says which those are.
CpuPlan plan_pinning(const PlaceRequest& req, const Placement& p) {
  const std::vector<int> allowed = pinnable_cpus(req.cpus);  // a bad --cpus is told whatever --pin-cpus says
  CpuPlan none;
  if (req.pin == "off") {
    none.why_not = "--pin-cpus off";
    return none;
  }
  if (req.pin == "auto" && p.device != Device::cuda) {
    none.why_not = "the CPU device (its timings count for nothing)";
    return none;
  }
  std::vector<std::vector<int>> near;
  const json devices = p.probe.value("devices", json::array());
  for (int r = 0; r < p.world; ++r) {
    int g = p.gpu_of(r);
    near.push_back(g >= 0 && g < static_cast<int>(devices.size())
                       ? cpus_near_pci(devices[g].value("pci_bus_id", std::string()))
                       : std::vector<int>{});
  }
  CpuPlan plan = plan_cpus(p.world, allowed, near, req.pin == "on" ? 0 : 1, smt_siblings(allowed));
  if (req.pin == "on" && !plan.pinned())
    throw io::InputError("--pin-cpus on: " + plan.why_not + "; use --pin-cpus auto, or fewer ranks");
  return plan;
}

}  // namespace

Placement place(const PlaceRequest& req, const spec::ProblemSpec* spec, const std::string& size) {
  Placement p;
  std::string device = req.device;
  if (device != "cpu") {
    p.probe = probe_devices();
    p.gpus = static_cast<int>(p.probe.value("devices", json::array()).size());
    if (!p.probe.value("cuda_built", false) && device == "cuda")
      throw io::InputError("pkb was built without the CUDA device; use --device cpu or rebuild with the CUDA toolkit");
    if (device == "cuda" && p.gpus == 0)
      throw io::InputError("--device cuda, but no GPU is visible (" +
                           p.probe.value("note", p.probe.value("error", std::string("CUDA sees none"))) + ")");
    device = p.gpus > 0 ? "cuda" : "cpu";
    if (p.gpus > 0) p.gpu_name = p.probe["devices"][0].value("name", "");
  }
  p.device = device_from_name(device);
  if (p.device == Device::cpu) {
    p.world = req.world ? req.world : 4;
    p.ranks_per_gpu = 1;
    p.comm = req.ref_comm == "shm" ? Comm::shm : Comm::gloo;
  } else {
    place_on_gpus(req, p);
  }
  if (p.comm == Comm::shm && p.world > kShmMaxRanks) {  // its regions hold a mailbox per peer
    if (req.ref_comm == "shm")
      throw io::InputError("--ref-comm shm takes up to " + std::to_string(kShmMaxRanks) + " ranks, not " +
                           std::to_string(p.world) + "; use --ref-comm gloo");
    p.comm = Comm::gloo;
  }
  if (spec) {
    std::string err = spec->world_size_error(p.world, size);
    if (!err.empty()) throw io::InputError(err + "; pick another --world-size or --size");
  }
  p.cpus = plan_pinning(req, p);
  if (!req.multicast) {
    p.env.push_back({"NCCL_NVLS_ENABLE", "0"});
    p.env.push_back({"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"});
    p.env.push_back({"NVSHMEM_DISABLE_NVLS", "1"});
  }
  // NCCL connects everything while communicators are made, before a candidate is loaded
  // (the sandbox denies new network sockets after that).
  p.env.push_back({"NCCL_RUNTIME_CONNECT", "0"});
  // NCCL's RAS thread keeps connecting to peers after set-up, which the sandbox (on every
  // thread of a candidate rank) denies: pkb's runs are one node, watched by pkb itself.
  p.env.push_back({"NCCL_RAS_ENABLE", "0"});
  // One OpenMP thread per rank, and no OpenBLAS pool (numpy's, started on import): W ranks
  // already share the cores, and a fork server that imports torch must stay single-threaded.
  if (!getenv("OMP_NUM_THREADS")) p.env.push_back({"OMP_NUM_THREADS", "1"});
  if (!getenv("OPENBLAS_NUM_THREADS")) p.env.push_back({"OPENBLAS_NUM_THREADS", "1"});
  return p;
}

std::map<std::string, double> phase_budgets(const spec::ProblemSpec* spec, const std::string& size,
                                            const Placement& p, double timeout) {
  double trial = spec && spec->trial_timeout_s > 0 ? spec->trial_timeout_s : 60;
  if (size != "default") trial *= 4;
  if (p.ranks_per_gpu > 1 || p.device == Device::cpu) trial *= 2;
  // Bootstrap, the interpreter's start and the waits are pkb's own: --timeout leaves them alone.
  std::map<std::string, double> b = {{phase::kBootstrap, 120}, {phase::kInterpreter, 300},
                                     {phase::kInit, 180},      {phase::kTrial, trial},
                                     {phase::kSync, trial},    {phase::kSave, 300}, {phase::kFinish, 60},
                                     {phase::kExit, 60},       {"default", 120}};
  for (const char* t : phase::kTimingPhases) b[t] = 10 * trial;
  // Waiting covers whatever the partner may spend in its own phases, each with its own
  // deadline; this one only ends a wait that nothing else would.
  for (const char* w : phase::kWaitingPhases)
    if (std::string(w) != phase::kSync) b[w] = 40 * trial + 600;
  auto waiting = [](const std::string& k) {
    for (const char* w : phase::kWaitingPhases)
      if (k == w && k != phase::kSync) return true;
    return false;
  };
  // The judges' checks of the timed calls are pkb's own work too (a reference call per
  // captured call): a --timeout meant for the candidate must not call them its hang.
  if (timeout > 0)
    for (auto& [k, v] : b)
      if (k != phase::kBootstrap && k != phase::kInterpreter && k != phase::kTimingChecks && !waiting(k)) v = timeout;
  return b;
}

}  // namespace pkb::launch
