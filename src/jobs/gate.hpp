// The gate between a judge rank and its candidate rank (pkb eval, CUDA device): how the
// judge times and captures the candidate's calls from outside the candidate's process.
//
// Three flags sit at the start of the candidate rank's harness (eval/layout.hpp), which
// both processes map; sequence numbers only grow. Per call s:
//
//   candidate stream:  wait go >= s, C0 ........ the call ........ done = s, C1
//   candidate (side):  ready = s   (the call is being enqueued)
//   judge stream:      wait ready >= s, L2 evicted, judges aligned, J0, go = s,
//                      wait done >= s, J1, the outputs copied into the judge's memory
//
// J0 and J1 are events on the judge's stream: the call's time is J1 - J0 less what the
// gate itself costs (calibrated on pkb's own empty calls before the candidate is loaded).
// C0 and C1 are the candidate rank's own events (its reading): C0 is enqueued before
// `ready`, C1 after `done`, so that where the host is slower than the call's work, the only
// launch of pkb's in the span after the call's own is `done`, as the judges' timing of the
// reference has its stop event there and nothing else. Before each call the candidate rank
// asks its judge for the inputs and spins until they are written (jobs/eval_candidate.cpp),
// as the judge's own reference calls follow a spinning synchronise: a thread that slept
// enqueues the next call slower.
// Nothing in the candidate's process can move them: rewriting its event timer, its
// reports or its clocks changes only its own reading (which the parent compares). The
// outputs are copied out the moment `done` is written on the candidate's stream, into
// memory the candidate never maps: work that lands later is missing from the copy, and
// nothing can be written into a capture afterwards. `ready` is written as the call starts
// to be enqueued, not after, so a call that waits on its own stream inside pkb_run cannot
// deadlock; the L2 eviction after it gives the host time to enqueue the rest.
//
// On the CPU device there are no streams: the judge copies the outputs as the candidate
// rank says a call returned, and the candidate rank's host clock is the only one.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "device/device.hpp"
#include "heap/heap.hpp"

namespace pkb::jobs {

// The judge's side, over its mapping of the candidate rank's harness (`harness`: where the
// device region starts in the judge's address space).
class JudgeGate {
 public:
  // Allocates the L2 eviction's buffer and loads the judges' barrier kernel now (a barrier
  // of the judges: every judge makes its gate at the same point): either could otherwise
  // synchronise the device in the middle of a call, while the judge's stream waits on a
  // flag the candidate rank writes only once the judge has told it to go ahead.
  JudgeGate(at::Device device, void* stream, char* harness, const heap::Heap& judges);

  // A trial: `go` now (the inputs are in place), the outputs copied into `into` once the
  // call is done. Enqueued on the judge's stream; sync() waits for it.
  void trial(uint32_t seq, const std::vector<at::Tensor>& out, const std::vector<at::Tensor>* into);
  // A timed call (or an empty one, for the calibration): the sequence above, timed as slot
  // `i` of `timer`; `into` (or nullptr: not captured) gets the outputs. `judges`: the
  // judge ranks' heap, whose pads align the ranks.
  void timed(uint32_t seq, device::CallTimer& timer, int i, bool cold, const heap::Heap& judges,
             const std::vector<at::Tensor>& out, const std::vector<at::Tensor>* into);
  void sync();

 private:
  at::Device device_;
  void* stream_;
  uint32_t *go_, *ready_, *done_;
};

// The candidate rank's side, over its own harness.
class CandidateGate {
 public:
  CandidateGate(at::Device device, void* stream, char* harness);
  ~CandidateGate();
  // The flags zeroed, before the judge maps them.
  void reset();
  // `call` (which enqueues the candidate's work on the stream) between `go` and `done`,
  // with `ready` written as it starts, timed as call `i` of the rank's own `timer` where
  // there is one. `done` is written whatever the call returns, so the judge never waits on
  // a call that failed.
  template <class F>
  auto call(uint32_t seq, F&& f, device::CallTimer* own = nullptr, int i = 0) {
    before(seq, own, i);
    struct Done {
      CandidateGate* g;
      uint32_t seq;
      device::CallTimer* own;
      int i;
      ~Done() {
        try {
          g->after(seq, own, i);
        } catch (...) {  // a broken device: the rank's next synchronisation reports it
        }
      }
    } done{this, seq, own, i};
    return f();
  }

 private:
  void before(uint32_t seq, device::CallTimer* own, int i);
  void after(uint32_t seq, device::CallTimer* own, int i);
  at::Device device_;
  void* stream_;
  void* side_ = nullptr;  // where `ready` is written: idle, so it lands at once
  uint32_t *go_, *ready_, *done_;
};

}  // namespace pkb::jobs
