#include "jobs/gate.hpp"

#include "eval/layout.hpp"
#include "jobs/timing.hpp"

namespace pkb::jobs {

namespace {

uint32_t* flag(char* harness, size_t offset) { return reinterpret_cast<uint32_t*>(harness + offset); }

// The device outputs into the capture, on the current stream (the judge's); host ones are
// copied by the caller once the call is done.
void copy_device_outputs(const std::vector<at::Tensor>& out, const std::vector<at::Tensor>& into) {
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].is_cpu()) into[i].copy_(out[i], /*non_blocking=*/true);
}

}  // namespace

JudgeGate::JudgeGate(at::Device device, void* stream, char* harness, const heap::Heap& judges)
    : device_(device), stream_(stream), go_(flag(harness, eval::kGateGo)), ready_(flag(harness, eval::kGateReady)),
      done_(flag(harness, eval::kGateDone)) {
  if (!device_.is_cuda()) return;
  device::flush_l2(device_, stream_);
  device::heap_barrier(judges, timing::pkb_channel(judges), stream_);
  sync();
}

void JudgeGate::trial(uint32_t seq, const std::vector<at::Tensor>& out, const std::vector<at::Tensor>* into) {
  if (!device_.is_cuda()) return;
  device::write_flag(stream_, go_, seq);
  device::wait_flag(stream_, done_, seq);
  if (into) copy_device_outputs(out, *into);
}

void JudgeGate::timed(uint32_t seq, device::CallTimer& timer, int i, bool cold, const heap::Heap& judges,
                      const std::vector<at::Tensor>& out, const std::vector<at::Tensor>* into) {
  if (!device_.is_cuda()) return;
  device::wait_flag(stream_, ready_, seq);
  if (cold) device::flush_l2(device_, stream_);
  device::heap_barrier(judges, timing::pkb_channel(judges), stream_);
  timer.start(i);
  device::write_flag(stream_, go_, seq);
  device::wait_flag(stream_, done_, seq);
  timer.stop(i);
  if (into) copy_device_outputs(out, *into);
}

void JudgeGate::sync() { device::sync_stream(device_, stream_); }

CandidateGate::CandidateGate(at::Device device, void* stream, char* harness)
    : device_(device), stream_(stream), go_(flag(harness, eval::kGateGo)), ready_(flag(harness, eval::kGateReady)),
      done_(flag(harness, eval::kGateDone)) {
  if (device_.is_cuda()) side_ = device::make_stream(device_, /*current=*/false);
}

CandidateGate::~CandidateGate() {
  if (side_) device::destroy_stream(device_, side_, /*current=*/false);
}

void CandidateGate::reset() {
  if (!device_.is_cuda()) return;
  device::write_flag(stream_, go_, 0);
  device::write_flag(stream_, ready_, 0);
  device::write_flag(stream_, done_, 0);
  device::sync_stream(device_, stream_);
}

void CandidateGate::before(uint32_t seq, device::CallTimer* own, int i) {
  if (device_.is_cuda()) device::wait_flag(stream_, go_, seq);
  if (own) own->start(i);
  if (device_.is_cuda()) device::write_flag(side_, ready_, seq);
}

void CandidateGate::after(uint32_t seq, device::CallTimer* own, int i) {
  if (device_.is_cuda()) device::write_flag(stream_, done_, seq);
  if (own) own->stop(i);
}

}  // namespace pkb::jobs
