// The CPU device's heap: one memfd per rank, shared with every rank over the bootstrap
// channel. Nothing is named in /dev/shm, so a killed run leaves nothing behind.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "heap/heap.hpp"
#include "launch/client.hpp"

#include <algorithm>
#include <string>

namespace pkb::heap {

namespace {

constexpr char kName[] = "pkb-heap";

class HostMapping : public Mapping {
 public:
  HostMapping(int fd, size_t bytes, const std::string& what) {
    void* p = mmap(nullptr, std::max<size_t>(bytes, 1), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of " + what);
    data_ = p;
    bytes_ = bytes;
  }
  ~HostMapping() override { munmap(data_, std::max<size_t>(bytes_, 1)); }
};

class HostHeap : public Heap {
 public:
  HostHeap(launch::Client& client, int rank, int world, size_t bytes, size_t pad_bytes, const std::string& name) {
    rank_ = rank;
    world_ = world;
    bytes_ = bytes;
    pad_bytes_ = pad_bytes;
    span_ = bytes + pad_bytes;
    bases_ = client.map_shared(name.empty() ? kName : name, rank, world, span_);
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

std::string heap_key(bool cuda, int rank) {
  return (cuda ? std::string("heap/cuda/") : std::string(kName) + "/") + std::to_string(rank);
}

std::unique_ptr<Mapping> import_host(launch::Client& client, const std::string& ns, const std::string& key, size_t bytes) {
  int fd = client.get_fd_from(ns, key);
  try {
    auto m = std::make_unique<HostMapping>(fd, bytes, ns + key);
    close(fd);
    return m;
  } catch (...) {
    close(fd);
    throw;
  }
}

std::unique_ptr<Mapping> export_host(launch::Client& client, const std::string& key, size_t bytes) {
  int fd = memfd_create(key.c_str(), MFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (ftruncate(fd, static_cast<off_t>(std::max<size_t>(bytes, 1))) != 0) {
    close(fd);
    throw std::system_error(errno, std::generic_category(), "ftruncate of " + key);
  }
  try {
    auto m = std::make_unique<HostMapping>(fd, bytes, key);
    client.set_fd(key, fd);
    close(fd);
    return m;
  } catch (...) {
    close(fd);
    throw;
  }
}

std::unique_ptr<Heap> make_host_heap(launch::Client& client, int rank, int world, size_t bytes, size_t pad_bytes,
                                     const std::string& name) {
  return std::make_unique<HostHeap>(client, rank, world, bytes, pad_bytes, name);
}

}  // namespace pkb::heap
