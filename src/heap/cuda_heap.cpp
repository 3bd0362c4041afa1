// The CUDA device's heap: one cuMem allocation per rank, exported as a POSIX file
// descriptor, sent to every peer over the bootstrap channel and mapped there. This works
// across processes that share one GPU too. Multicast (NVLS) is never used.
//
// The driver API is reached through cudaGetDriverEntryPointByVersion, so pkb does not
// link libcuda and still starts on machines without an NVIDIA driver.
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "heap/heap.hpp"
#include "launch/client.hpp"

namespace pkb::heap {

namespace {

struct Driver {
  decltype(&cuMemGetAllocationGranularity) granularity;
  decltype(&cuMemCreate) create;
  decltype(&cuMemExportToShareableHandle) export_handle;
  decltype(&cuMemImportFromShareableHandle) import_handle;
  decltype(&cuMemAddressReserve) reserve;
  decltype(&cuMemMap) map;
  decltype(&cuMemSetAccess) set_access;
  decltype(&cuMemUnmap) unmap;
  decltype(&cuMemAddressFree) address_free;
  decltype(&cuMemRelease) release;
  decltype(&cuGetErrorString) error_string;
};

template <class F>
void load(F& fn, const char* name) {
  cudaDriverEntryPointQueryResult status;
  void* p = nullptr;
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &status) != cudaSuccess || !p)
    throw std::runtime_error(std::string("CUDA driver lacks ") + name);
  fn = reinterpret_cast<F>(p);
}

const Driver& driver() {
  static Driver d = [] {
    Driver x{};
    load(x.granularity, "cuMemGetAllocationGranularity");
    load(x.create, "cuMemCreate");
    load(x.export_handle, "cuMemExportToShareableHandle");
    load(x.import_handle, "cuMemImportFromShareableHandle");
    load(x.reserve, "cuMemAddressReserve");
    load(x.map, "cuMemMap");
    load(x.set_access, "cuMemSetAccess");
    load(x.unmap, "cuMemUnmap");
    load(x.address_free, "cuMemAddressFree");
    load(x.release, "cuMemRelease");
    load(x.error_string, "cuGetErrorString");
    return x;
  }();
  return d;
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* s = nullptr;
  driver().error_string(r, &s);
  throw std::runtime_error(std::string(what) + ": " + (s ? s : "CUDA driver error " + std::to_string(r)));
}

void check(cudaError_t r, const char* what) {
  if (r != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(r));
}

class CudaHeap : public Heap {
 public:
  CudaHeap(launch::Client& client, int rank, int world, int device, size_t bytes, size_t pad_bytes,
           const std::string& name) {
    auto key = [&](int r) { return name.empty() ? heap_key(true, r) : name + "/" + std::to_string(r); };
    rank_ = rank;
    world_ = world;
    device_ = device;
    bytes_ = bytes;
    pad_bytes_ = pad_bytes;
    const Driver& d = driver();
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaFree(nullptr), "CUDA context");

    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t gran = 0;
    check(d.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "cuMemGetAllocationGranularity");
    span_ = (bytes + pad_bytes + gran - 1) / gran * gran;

    check(d.create(&own_, span_, &prop, 0), "cuMemCreate (symmetric heap; lower --heap-size?)");
    int fd = -1;
    check(d.export_handle(&fd, own_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "cuMemExportToShareableHandle");
    client.set_fd(key(rank), fd);
    close(fd);

    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    for (int r = 0; r < world; ++r) {
      CUmemGenericAllocationHandle h = own_;
      if (r != rank) {
        int peer = client.get_fd(key(r));
        check(d.import_handle(&h, reinterpret_cast<void*>(static_cast<intptr_t>(peer)),
                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
              "cuMemImportFromShareableHandle");
        close(peer);
        imported_.push_back(h);
      }
      CUdeviceptr p = 0;
      check(d.reserve(&p, span_, gran, 0, 0), "cuMemAddressReserve");
      check(d.map(p, span_, 0, h, 0), "cuMemMap");
      check(d.set_access(p, span_, &access, 1), "cuMemSetAccess");
      mapped_.push_back(p);
      bases_.push_back(reinterpret_cast<void*>(p));
      pads_.push_back(reinterpret_cast<uint32_t*>(p + bytes));
    }
    check(cudaMemset(pads_[rank], 0, pad_bytes), "zeroing the signal pad");
    check(cudaMalloc(&dev_arrays_, 2 * world * sizeof(void*)), "cudaMalloc");
    check(cudaMemcpy(dev_arrays_, bases_.data(), world * sizeof(void*), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(dev_arrays_ + world, pads_.data(), world * sizeof(void*), cudaMemcpyHostToDevice), "cudaMemcpy");
    device_bases_ = dev_arrays_;
    device_pads_ = reinterpret_cast<uint32_t* const*>(dev_arrays_ + world);
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    client.barrier(world);  // every pad is zero before anyone signals
  }

  ~CudaHeap() override {
    const Driver& d = driver();
    cudaDeviceSynchronize();
    if (dev_arrays_) cudaFree(dev_arrays_);
    for (CUdeviceptr p : mapped_) {
      d.unmap(p, span_);
      d.address_free(p, span_);
    }
    for (auto h : imported_) d.release(h);
    if (own_) d.release(own_);
  }

 private:
  size_t span_ = 0;
  CUmemGenericAllocationHandle own_ = 0;
  std::vector<CUmemGenericAllocationHandle> imported_;
  std::vector<CUdeviceptr> mapped_;
  void** dev_arrays_ = nullptr;
};

// Another process's allocation mapped here (a judge rank's view of its candidate rank's).
class CudaMapping : public Mapping {
 public:
  CudaMapping(int fd, int device, size_t bytes) {
    const Driver& d = driver();
    check(cudaSetDevice(device), "cudaSetDevice");
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t gran = 0;
    check(d.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "cuMemGetAllocationGranularity");
    span_ = (std::max<size_t>(bytes, 1) + gran - 1) / gran * gran;
    check(d.import_handle(&handle_, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
          "cuMemImportFromShareableHandle");
    check(d.reserve(&ptr_, span_, gran, 0, 0), "cuMemAddressReserve");
    check(d.map(ptr_, span_, 0, handle_, 0), "cuMemMap");
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    check(d.set_access(ptr_, span_, &access, 1), "cuMemSetAccess");
    data_ = reinterpret_cast<void*>(ptr_);
    bytes_ = bytes;
  }
  ~CudaMapping() override {
    const Driver& d = driver();
    cudaDeviceSynchronize();
    d.unmap(ptr_, span_);
    d.address_free(ptr_, span_);
    d.release(handle_);
  }

 private:
  CUdeviceptr ptr_ = 0;
  size_t span_ = 0;
  CUmemGenericAllocationHandle handle_ = 0;
};

}  // namespace

std::unique_ptr<Mapping> import_cuda(launch::Client& client, const std::string& ns, const std::string& key, int device,
                                     size_t bytes) {
  int fd = client.get_fd_from(ns, key);
  try {
    auto m = std::make_unique<CudaMapping>(fd, device, bytes);
    close(fd);
    return m;
  } catch (...) {
    close(fd);
    throw;
  }
}

std::unique_ptr<Heap> make_cuda_heap(launch::Client& client, int rank, int world, int device, size_t bytes,
                                     size_t pad_bytes, const std::string& name) {
  return std::make_unique<CudaHeap>(client, rank, world, device, bytes, pad_bytes, name);
}

}  // namespace pkb::heap
