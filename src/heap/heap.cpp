#include "heap/heap.hpp"

#include <stdexcept>

namespace pkb::heap {

size_t Heap::allocate(size_t size, size_t align) {
  size_t off = (used_ + align - 1) / align * align;
  if (off + size > bytes_)
    throw std::runtime_error("symmetric heap full: " + std::to_string(off + size) + " bytes wanted, " +
                             std::to_string(bytes_) + " per rank (raise --heap-size)");
  used_ = off + size;
  layout_ += std::to_string(off) + "+" + std::to_string(size) + ";";
  return off;
}

}  // namespace pkb::heap
