// Hyena long convolution (Evo 2) under all-to-all context parallelism: x1, x2, v (B, C, L)
// are zig-zag sequence shards; all-to-alls make them channel-parallel over the whole
// sequence (natural order), z = x1 * fftconv(x2 * v, h) + bias term (fp32, FFT of size
// 2*Ls), z rounds to dt, and an all-to-all returns the zig-zag shards; output (B, L, C).
// Origin: ParallelKernelBench 72_hyena_forward_cp (NeMo / Savanna).
// Deviations: random shared h and bias (the original's were constant ramps); intermediates
// in fp32 with one rounding (the original rounded x2*v, the convolution and x1*y).
#include <ATen/ATen.h>

#include <memory>

#include "pkb/reference.hpp"

namespace {

// Chunk order of the zig-zag: the concatenated shards of ranks 0..W-1 hold chunks
// 0, 2W-1, 1, 2W-2, ...; natural[i] = position of chunk i in that order.
std::vector<int64_t> zigzag_order(int w) {
  std::vector<int64_t> order;
  for (int r = 0; r < w; ++r) {
    order.push_back(r);
    order.push_back(2 * w - 1 - r);
  }
  return order;
}

// The zig-zag's chunk orders as index tensors on the rank's device: `to_natural` picks, for
// each chunk of the natural order, its position in the shards' order; `to_shards` the
// reverse. Made once in setup: a host tensor copied to the device in every call would hold
// the host there until the device had done all that came before it.
struct ZigZag {
  at::Tensor to_natural, to_shards;
  ZigZag(int w, at::Device device) {
    std::vector<int64_t> order = zigzag_order(w), where(2 * w);
    for (int64_t i = 0; i < 2 * w; ++i) where[order[i]] = i;
    to_natural = at::tensor(where, at::TensorOptions().dtype(at::kLong)).to(device);
    to_shards = at::tensor(order, at::TensorOptions().dtype(at::kLong)).to(device);
  }
};

// (B, C, L) zig-zag shard, all channels -> (B, C/W, W*L) this rank's channels, natural order.
at::Tensor split_to_full(pkb::Comm& comm, const at::Tensor& x, const ZigZag& zz) {
  int64_t w = comm.size(), b = x.size(0), c = x.size(1), l = x.size(2), cl = c / w;
  at::Tensor send = x.reshape({b, w, cl, l}).permute({1, 0, 2, 3}).contiguous();  // (W, B, Cl, L)
  at::Tensor recv = at::empty_like(send);
  comm.all_to_all(recv, send);
  // recv (W src, B, Cl, 2 chunks, L/2): chunk k of src s is global chunk order[2s+k]
  at::Tensor chunks = recv.view({w, b, cl, 2, l / 2}).permute({0, 3, 1, 2, 4}).reshape({2 * w, b, cl, l / 2});
  return chunks.index_select(0, zz.to_natural).permute({1, 2, 0, 3}).reshape({b, cl, w * l});
}

// (B, C/W, Ls) natural order -> this rank's zig-zag chunks, all channels, written
// transposed into `into` (B, L, C).
void full_to_split(pkb::Comm& comm, const at::Tensor& z, const ZigZag& zz, const at::Tensor& into) {
  int64_t w = comm.size(), b = z.size(0), cl = z.size(1), l = z.size(2) / w;
  at::Tensor shards = z.view({b, cl, 2 * w, l / 2}).index_select(2, zz.to_shards);  // chunks in shard order
  at::Tensor send = shards.reshape({b, cl, w, l}).permute({2, 0, 1, 3}).contiguous();  // (W dst, B, Cl, L)
  at::Tensor recv = at::empty_like(send);
  comm.all_to_all(recv, send);
  into.view({b, l, w, cl}).copy_(recv.permute({1, 3, 0, 2}));  // (B, L, C), channels by src rank
}

struct HyenaFftConv : pkb::Reference {
  std::unique_ptr<ZigZag> zigzag;
  void setup(pkb::Ctx& ctx) override { zigzag = std::make_unique<ZigZag>(ctx.world(), ctx.device()); }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    pkb::Comm& comm = ctx.comm();
    int64_t w = ctx.world(), c = in["x1"].size(1), cl = c / w, r = ctx.rank();
    // The three inputs in one exchange (they move alike); x1 stays in dt, widened where it
    // is read; u = x2 * v in fp32 with v widened as read.
    int64_t b = in["x1"].size(0);
    at::Tensor all = split_to_full(comm, at::cat({in["x1"], in["x2"], in["v"]}, 0), *zigzag);  // (3B, C/W, Ls)
    at::Tensor x1 = all.narrow(0, 0, b), x2 = all.narrow(0, b, b), v = all.narrow(0, 2 * b, b);
    at::Tensor u = x2.to(at::kFloat).mul_(v);
    int64_t ls = u.size(-1), n = 2 * ls;
    at::Tensor h = in["h"].narrow(0, r * cl, cl).to(at::kFloat);
    at::Tensor bias = in["conv_bias"].narrow(0, r * cl, cl).to(at::kFloat).view({1, cl, 1});
    at::Tensor hf = at::fft_rfft(h, n, -1);
    at::Tensor uf = at::fft_rfft(u, n, -1).mul_(hf);
    // y + bias * u, then x1 * it, in place on the convolution's first Ls outputs.
    at::Tensor y = at::fft_irfft(uf, n, -1).narrow(-1, 0, ls).addcmul_(u, bias).mul_(x1);
    full_to_split(comm, y.to(in["x1"].scalar_type()), *zigzag, out["z"]);
  }
};

}  // namespace

PKB_REFERENCE("cp_hyena_fftconv_all2all", HyenaFftConv);
