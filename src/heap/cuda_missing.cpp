// Built instead of cuda_heap.cpp where pkb has no CUDA device.
#include <stdexcept>

#include "heap/heap.hpp"

namespace pkb::heap {

std::unique_ptr<Heap> make_cuda_heap(launch::Client&, int, int, int, size_t, size_t, const std::string&) {
  throw std::runtime_error("pkb was built without the CUDA device (no CUDA toolkit at configure time)");
}

std::unique_ptr<Mapping> import_cuda(launch::Client&, const std::string&, const std::string&, int, size_t) {
  throw std::runtime_error("pkb was built without the CUDA device (no CUDA toolkit at configure time)");
}

}  // namespace pkb::heap
