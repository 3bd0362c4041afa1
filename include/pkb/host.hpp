// Host-side twins of device.cuh for CPU candidates: the same signal-pad protocol over the
// CPU device's shared-memory heap, with C++ atomics at process scope.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <chrono>
#include <thread>

namespace pkb {
namespace host {

inline int slot(int channel, int src, int world) { return channel * world + src; }

// A wait's next turn: spin, then yield, then sleep. The CPU device's ranks are processes
// that may outnumber the cores, and a waiter that never sleeps takes turns from the peer it
// waits for. pkb's shared-memory communicator waits the same way (src/comm/shm_comm.cpp).
class Backoff {
 public:
  void wait() {
    if (++n_ < 200) return;
    if (n_ < 400) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }

 private:
  int n_ = 0;
};

inline void put_signal(uint32_t* pad, int slot) {
  uint32_t expected = 0;
  for (Backoff b; !__atomic_compare_exchange_n(&pad[slot], &expected, 1u, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
       b.wait())
    expected = 0;
}

inline void wait_signal(uint32_t* pad, int slot) {
  uint32_t expected = 1;
  for (Backoff b; !__atomic_compare_exchange_n(&pad[slot], &expected, 0u, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
       b.wait())
    expected = 1;
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
