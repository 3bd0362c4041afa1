// Built instead of nccl_comm.cpp where pkb has no CUDA device.
#include <stdexcept>

#include "comm/comms.hpp"

namespace pkb::comm {

std::unique_ptr<Comm> make_nccl(launch::Client&, int, int, at::Device) {
  throw std::runtime_error("pkb was built without the CUDA device (no CUDA toolkit at configure time)");
}

void* nccl_handle(Comm*) { return nullptr; }

}  // namespace pkb::comm
