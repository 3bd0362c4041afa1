// Where a run's ranks go: the device (CUDA when a GPU is visible), W, ranks per GPU and the
// references' communicator (NCCL, or gloo when ranks share a GPU, with a private MPS
// daemon), and how long each phase may take. The parent never initialises CUDA: it asks
// `pkb __probe` in a child process.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch/cpus.hpp"
#include "launch/kinds.hpp"
#include "launch/mps.hpp"
#include "spec/spec.hpp"

namespace pkb::launch {

// The most ranks pkb's shared-memory communicator takes (src/comm/shm_comm.cpp).
inline constexpr int kShmMaxRanks = 64;

struct PlaceRequest {
  std::string device = "auto";  // cuda, cpu or auto
  int world = 0;                // 0: the visible GPUs (4 on the CPU device)
  int ranks_per_gpu = 0;        // 0: as few as W needs
  bool multicast = false;       // allow NVLink multicast (NVLS); never on shared machines
  bool no_mps = false;
  bool mps = false;             // a private MPS daemon even where every rank has a GPU of its own
  // Without a GPU per rank: "shm" or "gloo"; "auto" is shm where ranks share a GPU, gloo
  // on the CPU device. A GPU per rank always takes NCCL.
  std::string ref_comm = "auto";
  // Timed threads on CPUs of their own (launch/cpus.hpp): "auto" on CUDA where two CPUs a
  // rank and one more are allowed, "on" wherever two a rank are (else an error), "off".
  std::string pin = "auto";
  std::string cpus;  // the CPUs pinning may take, a CPU list ("": every CPU this process may use)
};

struct Placement {
  Device device = Device::cpu;
  int world = 1;
  int ranks_per_gpu = 1;
  int gpus = 0;        // visible GPUs
  Comm comm = Comm::gloo;  // the references'
  std::string gpu_name;
  nlohmann::json probe = nlohmann::json::object();
  std::unique_ptr<MpsDaemon> mps;
  CpuPlan cpus;  // where each rank's timed thread and the rest of it run
  std::vector<std::pair<std::string, std::string>> env;  // for every rank
  std::vector<std::string> warnings;
  // Rank r on GPU r / ranks_per_gpu: co-resident ranks are neighbours.
  int gpu_of(int rank) const { return device == Device::cuda ? rank / ranks_per_gpu : -1; }
};

// Runs `pkb __probe` in a child process: the GPUs as CUDA sees them, or why there are none.
nlohmann::json probe_devices();

// Decides device, W, ranks per GPU and communicator; starts MPS where ranks share a GPU.
// `spec` (optional) checks W against the problem's constraints at `size`. Throws
// io::InputError for a request that cannot be placed.
Placement place(const PlaceRequest& req, const spec::ProblemSpec* spec, const std::string& size);

// Seconds each phase may take (phases.hpp): a trial by the spec's timeout (60 s unless it
// says), more for other sizes, the CPU device and shared GPUs; timing phases ten trials.
// `timeout` > 0 replaces every budget but the bootstrap's.
std::map<std::string, double> phase_budgets(const spec::ProblemSpec* spec, const std::string& size,
                                            const Placement& p, double timeout);

}  // namespace pkb::launch
