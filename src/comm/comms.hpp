// Making communicators: the world communicator of a rank, and the wrapper that turns every
// collective into "no communication" (pkb validate).
#pragma once

#include <memory>

#include "launch/client.hpp"
#include "pkb/comm.hpp"

namespace pkb::comm {

// gloo over the parent's store; tensors on a CUDA device are staged through the host.
std::unique_ptr<Comm> make_gloo(launch::Client& client, int rank, int world, at::Device device);

// Shared memory between the ranks (one memfd region each, staged in pieces; CUDA tensors
// through the host): for ranks sharing a GPU, where NCCL cannot run. Up to 64 ranks.
std::unique_ptr<Comm> make_shm(launch::Client& client, int rank, int world, at::Device device);

// NCCL on the rank's GPU (the unique id travels through the parent's store). Throws
// where pkb was built without CUDA.
std::unique_ptr<Comm> make_nccl(launch::Client& client, int rank, int world, at::Device device);

// The ncclComm_t under `c`, or nullptr when it is not an NCCL communicator.
void* nccl_handle(Comm* c);

// Each rank sees only its own contribution; whatever would come from a peer reads as
// zero. Sub-communicators are formed through `inner` and wrapped the same way.
std::unique_ptr<Comm> make_no_comm(std::unique_ptr<Comm> inner);
// The same over a communicator the caller keeps.
std::unique_ptr<Comm> make_no_comm(Comm& inner);

// Members of the sub-communicator `color` after an all-gather of (color, key): global
// ranks of this comm in key order, and this rank's position (-1 if not a member).
struct SplitPlan {
  std::vector<int> members;
  int index = -1;
};
SplitPlan plan_split(Comm& parent, int color, int key);

}  // namespace pkb::comm
