// The CPU device's heap: one memfd per rank, shared with every rank over the bootstrap
// channel. Nothing is named in /dev/shm, so a killed run leaves nothing behind.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

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
    int fd = memfd_create("pkb-heap", MFD_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "memfd_create");
    if (ftruncate(fd, static_cast<off_t>(span_)) != 0) throw std::system_error(errno, std::generic_category(), "ftruncate");
    client.set_fd("heap/host/" + std::to_string(rank), fd);
    for (int r = 0; r < world; ++r) {
      int peer = r == rank ? fd : client.get_fd("heap/host/" + std::to_string(r));
      void* p = mmap(nullptr, span_, PROT_READ | PROT_WRITE, MAP_SHARED, peer, 0);
      if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of a peer's heap");
      if (peer != fd) close(peer);
      bases_.push_back(p);
      pads_.push_back(reinterpret_cast<uint32_t*>(static_cast<char*>(p) + bytes));
    }
    close(fd);
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
