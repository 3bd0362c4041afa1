// The symmetric heap candidates communicate through: every rank owns a region of the same
// size, mapped into every rank's address space, followed by a signal pad of uint32 slots
// that starts zeroed. On CUDA the regions are cuMem allocations shared as POSIX file
// descriptors over the bootstrap channel; on the CPU device they are memfd shared memory.
// Ranks allocate buffers in it collectively: the same sizes in the same order, so a
// buffer sits at the same offset in every rank's region.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pkb::launch {
class Client;
}

namespace pkb::heap {

class Heap {
 public:
  virtual ~Heap() = default;

  int rank() const { return rank_; }
  int world() const { return world_; }
  bool on_device() const { return device_ >= 0; }
  size_t bytes() const { return bytes_; }          // data bytes per rank
  size_t pad_bytes() const { return pad_bytes_; }  // signal-pad bytes per rank

  // Rank r's region and signal pad, as mapped in this process.
  void* base(int r) const { return bases_.at(r); }
  uint32_t* pad(int r) const { return pads_.at(r); }
  const std::vector<void*>& bases() const { return bases_; }
  const std::vector<uint32_t*>& pads() const { return pads_; }
  // The same arrays in device memory (CUDA heaps), for kernels; host arrays otherwise.
  void* const* bases_for_kernels() const { return device_bases_ ? device_bases_ : bases_.data(); }
  uint32_t* const* pads_for_kernels() const { return device_pads_ ? device_pads_ : pads_.data(); }

  // Reserves `size` bytes at the same offset on every rank; returns the offset, or throws
  // when the heap is full (--heap-size).
  size_t allocate(size_t size, size_t align = 256);
  size_t used() const { return used_; }
  // A digest of the allocations so far: ranks compare it to catch asymmetric ones.
  std::string layout() const { return layout_; }
  void reset() {
    used_ = 0;
    layout_.clear();
  }

 protected:
  int rank_ = 0, world_ = 1, device_ = -1;
  size_t bytes_ = 0, pad_bytes_ = 0, used_ = 0;
  std::string layout_;
  std::vector<void*> bases_;
  std::vector<uint32_t*> pads_;
  void* const* device_bases_ = nullptr;
  uint32_t* const* device_pads_ = nullptr;
};

// Memory another process of the evaluation exported through the store, mapped here
// read-write: a judge rank fills its candidate rank's inputs and reads its outputs so.
class Mapping {
 public:
  virtual ~Mapping() = default;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 protected:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// The store key under which rank r's heap region is exported.
std::string heap_key(bool cuda, int rank);
// The first `bytes` of what the key under namespace `ns` holds: a memfd (host) or a cuMem
// allocation on `device` (CUDA, same GPU or a peer).
std::unique_ptr<Mapping> import_host(launch::Client& client, const std::string& ns, const std::string& key, size_t bytes);
std::unique_ptr<Mapping> import_cuda(launch::Client& client, const std::string& ns, const std::string& key, int device,
                                     size_t bytes);
// Fresh zeroed shared memory of `bytes`, mapped here and exported under `key` for import_host.
std::unique_ptr<Mapping> export_host(launch::Client& client, const std::string& key, size_t bytes);

// `name`: the store keys its regions go under ("": the rank's own heap, heap_key); another
// name makes a further heap beside it (an original-format module's symmetric memory that
// outgrows the first).
std::unique_ptr<Heap> make_host_heap(launch::Client& client, int rank, int world, size_t bytes, size_t pad_bytes,
                                     const std::string& name = "");
// `device` is the CUDA ordinal the rank runs on. Throws where pkb has no CUDA device.
std::unique_ptr<Heap> make_cuda_heap(launch::Client& client, int rank, int world, int device, size_t bytes,
                                     size_t pad_bytes, const std::string& name = "");

}  // namespace pkb::heap
