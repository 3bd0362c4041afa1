// The CPU device's heap: one memfd per rank, shared with every rank over the bootstrap
// channel. Nothing is named in /dev/shm, so a killed run leaves nothing behind.
#include <sys/mman.h>

#include "heap/heap.hpp"
#include "launch/client.hpp"

namespace pkb::heap {

namespace {

class HostHeap : public Heap {
 public:
  HostHeap(launch::Client& client, int rank, int world, size_t bytes, size_t pad_bytes) {
    rank_ = rank;
    world_ = world;
    bytes_ = bytes;
    pad_bytes_ = pad_bytes;
    span_ = bytes + pad_bytes;
    bases_ = client.map_shared("pkb-heap", rank, world, span_);
    for (void* p : bases_) pads_.push_back(reinterpret_cast<uint32_t*>(static_cast<char*>(p) + bytes));
    client.barrier(world);  // every rank has every mapping before anyone signals
  }
  ~HostHeap() override {
    for (void* p : bases_) munmap(p, span_);
  }

 private:
  size_t span_ = 0;
};

}  // namespace

std::unique_ptr<Heap> make_host_heap(launch::Client& client, int rank, int world, size_t bytes, size_t pad_bytes) {
  return std::make_unique<HostHeap>(client, rank, world, bytes, pad_bytes);
}

}  // namespace pkb::heap
