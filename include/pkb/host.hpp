// Host-side twins of device.cuh for CPU candidates: the same signal-pad protocol over the
// CPU device's shared-memory heap, with C++ atomics at process scope.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <thread>

namespace pkb {
namespace host {

inline int slot(int channel, int src, int world) { return channel * world + src; }

inline void put_signal(uint32_t* pad, int slot) {
  uint32_t expected = 0;
  while (!__atomic_compare_exchange_n(&pad[slot], &expected, 1u, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
    expected = 0;
    std::this_thread::yield();
  }
}

inline void wait_signal(uint32_t* pad, int slot) {
  uint32_t expected = 1;
  while (!__atomic_compare_exchange_n(&pad[slot], &expected, 0u, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    expected = 1;
    std::this_thread::yield();
  }
}

// Every rank's writes before the barrier are visible to every rank after it.
inline void barrier(uint32_t* const* pads, int rank, int world, int channel) {
  for (int peer = 0; peer < world; ++peer) put_signal(pads[peer], slot(channel, rank, world));
  for (int peer = 0; peer < world; ++peer) wait_signal(pads[rank], slot(channel, peer, world));
}

template <class T>
T* peer_ptr(T* local, void* const* bases, int rank, int peer) {
  ptrdiff_t off = reinterpret_cast<const char*>(local) - reinterpret_cast<const char*>(bases[rank]);
  return reinterpret_cast<T*>(reinterpret_cast<char*>(bases[peer]) + off);
}

}  // namespace host
}  // namespace pkb
