// Host-side twins of device.cuh for CPU candidates: the same signal-pad protocol over the
// CPU device's shared-memory heap, with C++ atomics at process scope.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

// bf16 is the top half of an fp32: widen exactly, round to nearest even (NaN stays NaN).
inline float bf16_to_float(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t(u >> 16 | 0x40);
  return uint16_t((u + 0x7fffu + (u >> 16 & 1)) >> 16);
}

template <class T>
T* peer_ptr(T* local, void* const* bases, int rank, int peer) {
  ptrdiff_t off = reinterpret_cast<const char*>(local) - reinterpret_cast<const char*>(bases[rank]);
  return reinterpret_cast<T*>(reinterpret_cast<char*>(bases[peer]) + off);
}

}  // namespace host
}  // namespace pkb
