// The closed sets a run is placed with: the device its ranks run on and the references'
// communicator. Spelled as results, jobs and flags spell them ("cuda", "nccl").
#pragma once

#include <stdexcept>
#include <string>

namespace pkb::launch {

enum class Device { cpu, cuda };
enum class Comm { nccl, shm, gloo };

inline const char* name(Device d) { return d == Device::cuda ? "cuda" : "cpu"; }
inline const char* name(Comm c) { return c == Comm::nccl ? "nccl" : c == Comm::shm ? "shm" : "gloo"; }

// Throw std::invalid_argument for a name that is none of them.
inline Device device_from_name(const std::string& s) {
  if (s == "cuda") return Device::cuda;
  if (s == "cpu") return Device::cpu;
  throw std::invalid_argument("no device called '" + s + "' (cuda or cpu)");
}
inline Comm comm_from_name(const std::string& s) {
  if (s == "nccl") return Comm::nccl;
  if (s == "shm") return Comm::shm;
  if (s == "gloo") return Comm::gloo;
  throw std::invalid_argument("no communicator called '" + s + "' (nccl, shm or gloo)");
}

}  // namespace pkb::launch
