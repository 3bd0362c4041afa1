// A rank's runtime: its job, device, the references' communicator and (when the job wants
// one) the symmetric heap. The jobs (src/jobs/) run against it.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "heap/heap.hpp"
#include "launch/client.hpp"
#include "pkb/comm.hpp"
#include "rank/job.hpp"

namespace pkb::rank {

// An error with a kind the parent turns into a verdict (rank/job.hpp's ErrorKind).
struct RankError : std::runtime_error {
  RankError(ErrorKind kind, const std::string& what) : std::runtime_error(what), kind(kind) {}
  ErrorKind kind;
};

struct Rank {
  launch::Client& client;
  Job job;
  int rank = 0, world = 1;
  at::Device device{at::kCPU};
  std::unique_ptr<Comm> comm;  // the references' (a candidate rank's: the candidate's NCCL, or none)
  std::unique_ptr<heap::Heap> heap;

  // Loads reference libraries, selects the device, makes the communicator (collective), on
  // the partner CPU (Job::partner_cpu): the threads CUDA, NCCL and the rest start inherit it.
  Rank(launch::Client& c, Job j);
  // The calling thread onto the job's timing CPU (while it times), or back onto its partner.
  void to_timing_cpu() const;
  void to_partner_cpu() const;
  // Maps a heap of `bytes` per rank (collective).
  void make_heap(size_t bytes, size_t pad_bytes = size_t{1} << 16);
};

}  // namespace pkb::rank
