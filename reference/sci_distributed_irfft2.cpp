// PhysicsNeMo's distributed irfft2: rank r holds rows r of the half spectrum (B, C, H,
// X/2 + 1). The missing columns are rebuilt by conjugate symmetry (pad along X with the
// conjugated, flipped columns; all-gather along H to flip the padded part's rows; keep the
// own rows), a complex inverse FFT along X, an all-to-all to columns r of every row, a
// complex inverse FFT along H, the real part.
// Origin: ParallelKernelBench 60_physicsnemo_distributed_irfft.
// Deviation: the spectrum is drawn directly, Hermitian where a real field's must be.
#include <ATen/ATen.h>

#include <cmath>

#include "pkb/reference.hpp"

namespace {

struct DistributedIrfft2 : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t b = ctx.size("B"), c = ctx.size("C"), h = ctx.size("H"), hl = ctx.size("Hl"), xf = ctx.size("Xf");
    at::TensorOptions cf = ctx.options(at::kComplexFloat);
    at::Tensor x = at::randn({b, c, hl, xf}, ctx.rng(), cf);
    // Columns 0 and X/2 of the whole spectrum, Hermitian along H: z[k] = (v[k] + conj(v[-k])) / sqrt(2).
    at::Tensor v = at::randn({b, c, h, 2}, ctx.shared_rng(), cf);
    at::Tensor idx = at::remainder(-at::arange(h, ctx.options(at::kLong)), h);
    at::Tensor z = (v + v.index_select(2, idx).conj()) / std::sqrt(2.0);
    at::Tensor mine = z.narrow(2, ctx.rank() * hl, hl);
    x.select(3, 0).copy_(mine.select(3, 0));
    x.select(3, xf - 1).copy_(mine.select(3, 1));
    in["x"] = x;
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    const at::Tensor& x = in["x"];
    int64_t w = ctx.world(), r = ctx.rank(), b = x.size(0), c = x.size(1), hl = x.size(2), xf = x.size(3);
    int64_t h = hl * w, full = ctx.size("X"), xl = full / w;
    // One rank holds the whole half spectrum, exactly Hermitian where a real field's must be
    // (make_inputs): one C2R transform, where the form below rebuilds the full spectrum and
    // makes two full C2C ones.
    if (w == 1) {
      at::fft_irfft2_out(out["y"], x, at::IntArrayRef{h, full}, {2, 3}, "ortho");
      return;
    }
    // Conjugate padding along X: columns xf.. are the conjugates of columns full - xf .. 1.
    at::Tensor pad = at::zeros({b, c, hl, full}, x.options());
    pad.narrow(3, 0, xf).copy_(x);
    pad.narrow(3, xf, full - xf).copy_(x.narrow(3, 1, full - xf).conj().flip({3}));
    // All-gather along H, flip the padded columns' rows 1..H-1, keep the own rows.
    at::Tensor send = at::view_as_real(pad.permute({2, 0, 1, 3}).contiguous()).contiguous();  // (Hl, B, C, X, 2)
    at::Tensor all = at::view_as_complex(comm.all_gather(send)).permute({1, 2, 0, 3});     // (B, C, H, X)
    at::Tensor whole = all.contiguous();
    at::Tensor tail = whole.narrow(3, xf, full - xf).narrow(2, 1, h - 1);
    tail.copy_(tail.flip({2}));
    at::Tensor padded = whole.narrow(2, r * hl, hl);
    at::Tensor x1 = at::fft_ifft(padded, full, 3, "ortho");  // (B, C, Hl, X)
    // Columns to their ranks: (X, B, C, Hl) split along dim 0.
    at::Tensor s2 = at::view_as_real(x1.permute({3, 0, 1, 2}).contiguous()).contiguous();
    at::Tensor r2 = at::empty_like(s2);
    comm.all_to_all(r2, s2);
    // r2: (W, Xl, B, C, Hl) by source rank = row block -> (B, C, H, Xl)
    at::Tensor t = at::view_as_complex(r2).view({w, xl, b, c, hl}).permute({2, 3, 0, 4, 1}).reshape({b, c, h, xl});
    out["y"].copy_(at::real(at::fft_ifft(t, h, 2, "ortho")));  // the real parts, packed
  }
};

}  // namespace

PKB_REFERENCE("sci_distributed_irfft2", DistributedIrfft2);
