#include "rank/rank.hpp"

#include "comm/comms.hpp"
#include "device/device.hpp"
#include "launch/cpus.hpp"
#include "ref/registry.hpp"

namespace pkb::rank {

Rank::Rank(launch::Client& c, Job j) : client(c), job(std::move(j)), rank(job.rank), world(job.world) {
  to_partner_cpu();
  for (auto& lib : job.reference_libs) ref::load_reference_library(lib);
  if (job.device == launch::Device::cuda) device = at::Device(at::kCUDA, job.gpu);
  device::select(device);
  if (job.role == Role::candidate) {
    // A candidate rank's communicator is the candidate's own: NCCL where ranks have a GPU
    // each, none elsewhere.
    if (job.comm == launch::Comm::nccl) comm = comm::make_nccl(client, rank, world, device);
  } else if (job.comm == launch::Comm::nccl) {
    comm = comm::make_nccl(client, rank, world, device);
  } else if (job.comm == launch::Comm::shm) {
    comm = comm::make_shm(client, rank, world, device);
  } else {
    comm = comm::make_gloo(client, rank, world, device);
  }
  if (job.heap_bytes) make_heap(job.heap_bytes);
}

void Rank::make_heap(size_t bytes, size_t pad_bytes) {
  heap = device.is_cuda() ? heap::make_cuda_heap(client, rank, world, device.index(), bytes, pad_bytes)
                          : heap::make_host_heap(client, rank, world, bytes, pad_bytes);
}

void Rank::to_timing_cpu() const { launch::pin_thread(job.timing_cpu); }
void Rank::to_partner_cpu() const { launch::pin_thread(job.partner_cpu); }

}  // namespace pkb::rank
