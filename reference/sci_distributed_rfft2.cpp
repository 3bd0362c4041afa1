// PhysicsNeMo's distributed rfft2: rank r holds columns r of a real (B, H, X) field; a
// complex FFT along H, an all-to-all that transposes the split (rank r gets rows r of all
// columns), a complex FFT along X truncated to X/2 + 1: rank r returns rows r of
// rfft2(field, norm="ortho").
// Origin: ParallelKernelBench 59_physicsnemo_distributed_rfft.
// Deviation: none in the math; both parts of the complex output are compared.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct DistributedRfft2 : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["x"];
    int64_t w = ctx.world(), b = x.size(0), h = x.size(1), xl = x.size(2), hl = h / w, full = xl * w;
    // One rank holds the whole field: one R2C transform (cuFFT's), where the split form below
    // makes two full C2C ones and four copies.
    if (w == 1) {
      at::fft_rfft2_out(out["y"], x, at::IntArrayRef{h, xl}, {1, 2}, "ortho");
      return;
    }
    at::Tensor x1 = at::fft_fft(x, h, 1, "ortho");  // (B, H, Xl) complex
    // Rows of H to their ranks: (H, B, Xl) split along dim 0; complex as (re, im) pairs.
    at::Tensor send = at::view_as_real(x1.permute({1, 0, 2}).contiguous()).contiguous();
    at::Tensor recv = at::empty_like(send);
    ctx.comm().all_to_all(recv, send);
    // recv: (W, Hl, B, Xl) by source rank = column block -> (B, Hl, W * Xl)
    at::Tensor t = at::view_as_complex(recv).view({w, hl, b, xl}).permute({2, 1, 0, 3}).reshape({b, hl, full});
    at::Tensor x2 = at::fft_fft(t, full, 2, "ortho");
    out["y"].copy_(x2.narrow(2, 0, full / 2 + 1));  // the non-negative frequencies, packed
  }
};

}  // namespace

PKB_REFERENCE("sci_distributed_rfft2", DistributedRfft2);
