// Tensors a call returned, copied into pkb's output buffers: what a candidate in the
// original ParallelKernelBench's format needs (its `solution` returns tensors of its own),
// and what the reference in its "returns fresh tensors, then copied" form can share, so
// both sides pay the same copy.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "pkb/solution.h"

namespace pkb::eval {

// Copies results[i] into outputs[i] (a pkb_tensor of the harness: its data, capacity sizes,
// strides and dtype). Each result must have the output's dtype and rank, and its sizes: a
// dim the spec marks data-dependent ("<= capacity") may be smaller, and then the output's
// sizes[d] is set to it (the copy fills that prefix, as a candidate of the C ABI would).
// On CUDA the copy is enqueued on `stream` (the call's), whatever torch's current stream
// is, and ordered after the work enqueued there before; on the CPU device it is done on
// return. Returns "" or one line saying which output does not fit and why; nothing is
// copied then.
std::string copy_results(const std::vector<at::Tensor>& results, std::vector<pkb_tensor>& outputs, int device,
                         void* stream);

// Makes `stream` torch's current stream on `device` (CUDA; nothing on the CPU device):
// what a call's torch ops then run on.
void use_stream(int device, void* stream);

}  // namespace pkb::eval
