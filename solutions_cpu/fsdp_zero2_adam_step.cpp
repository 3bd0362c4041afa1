// fsdp_zero2_adam_step on the CPU device: the algorithm of solutions_cuda/
// fsdp_zero2_adam_step.cu over the shared-memory heap, so that its indexing is tested
// without a GPU. A ZeRO-2 training step of the MLP Linear(din, hid) -> ReLU ->
// Linear(hid, dout) (MSE loss) with Adam: the flat parameters (w1, b1, w2, b2; P
// elements) come from rank 0; rank r owns part r ([r part, (r+1) part), part = P / W).
//
// Algorithm (as the CUDA version):
//  1. Broadcast by pull: rank r copies part r of rank 0's input tensors into its own flat
//     copy `flat_p` (symmetric); barrier; then every other part j from rank j's flat_p.
//  2. Forward and backward (libtorch's CPU GEMMs stand in for cuBLAS); the gradients land
//     in the symmetric flat buffer `grad`, region B (w2, b2: the flat tail) first.
//  3. Reduce-scatter fused with Adam: for every element of the own part, sum that element
//     of every rank's `grad` (fp32), divide by W, Adam in fp32 on the own state, store the
//     new state and push the new parameter into the matching output tensor of every rank.
//     Region B runs on a second thread behind its own barrier while this thread computes
//     region A's gradients (the CUDA version's side stream); region A follows behind a
//     second barrier.
//  4. Join, then a last barrier: every parameter has landed in every output and nobody
//     reads my flat_p or grad any more.
// Barriers on channels 0..4 of the signal pads.
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "pkb/host.hpp"
#include "pkb/solution.h"
#include "pkb/torch_bridge.hpp"

namespace {

enum Channel { kStart = 0, kChunks = 1, kRegionB = 2, kRegionA = 3, kEnd = 4 };

struct Dims {
  int64_t nl, din, hid, dout, P, part;
  int64_t off[5];  // flat offsets of w1, b1, w2, b2 and the end (P)
};

struct State {
  void* flat_p = nullptr;  // symmetric: rank 0's parameters, flat
  void* grad = nullptr;    // symmetric: this rank's flat gradient
};

Dims dims_of(const pkb_tensor* in, int world) {
  Dims d;
  d.nl = in[0].sizes[0];
  d.din = in[0].sizes[1];
  d.dout = in[1].sizes[1];
  d.hid = in[2].sizes[0];
  d.off[0] = 0;
  d.off[1] = d.hid * d.din;
  d.off[2] = d.off[1] + d.hid;
  d.off[3] = d.off[2] + d.dout * d.hid;
  d.off[4] = d.off[3] + d.dout;
  d.P = d.off[4];
  d.part = d.P / world;
  return d;
}

struct Adam {
  float lr, beta1, beta2, eps, inv_bc1, inv_bc2, inv_world;
};

template <class T>
struct Fused {
  const T* grad;
  const T* flat_p;
  const T* m_in;
  const T* v_in;
  T* m_out;
  T* v_out;
  T* out[4];
  int64_t off[5];
  int64_t part_begin, begin, end;
  void* const* bases;
  int rank, world;
};

// The CUDA version's reduce_adam_push, one element after the other.
template <class T>
void reduce_adam_push(const Fused<T>& f, const Adam& a) {
  for (int64_t i = f.begin; i < f.end; ++i) {
    int64_t j = i - f.part_begin;
    float g = 0.f;
    for (int s = 0; s < f.world; ++s) {
      int p = (f.rank + s) % f.world;
      g += float(*pkb::host::peer_ptr(f.grad + i, f.bases, f.rank, p));
    }
    g *= a.inv_world;
    float m = a.beta1 * float(f.m_in[j]) + (1.f - a.beta1) * g;
    float v = a.beta2 * float(f.v_in[j]) + (1.f - a.beta2) * g * g;
    float upd = (m * a.inv_bc1) / (std::sqrt(v * a.inv_bc2) + a.eps);
    f.m_out[j] = T(m);
    f.v_out[j] = T(v);
    T p = T(float(f.flat_p[i]) - a.lr * upd);
    int t = i < f.off[1] ? 0 : i < f.off[2] ? 1 : i < f.off[3] ? 2 : 3;
    T* dst = f.out[t] + (i - f.off[t]);
    for (int s = 0; s < f.world; ++s) *pkb::host::peer_ptr(dst, f.bases, f.rank, (f.rank + s) % f.world) = p;
  }
}

template <class T>
int step(pkb_ctx* ctx, State* s, const pkb_tensor* in, pkb_tensor* out) {
  const int rank = ctx->rank, world = ctx->world;
  const Dims d = dims_of(in, world);
  T* flat_p = static_cast<T*>(s->flat_p);
  T* grad = static_cast<T*>(s->grad);
  at::ScalarType st = pkb::aten_dtype(in[0].dtype);
  auto view = [&](void* p, std::vector<int64_t> shape) { return at::from_blob(p, shape, at::TensorOptions().dtype(st)); };
  at::Tensor x = pkb::as_tensor(ctx, in[0]), y = pkb::as_tensor(ctx, in[1]);

  int64_t t = *static_cast<const int64_t*>(in[8].data);
  Adam a;
  a.lr = float(ctx->arg_float(ctx, "lr", nullptr));
  a.beta1 = float(ctx->arg_float(ctx, "beta1", nullptr));
  a.beta2 = float(ctx->arg_float(ctx, "beta2", nullptr));
  a.eps = float(ctx->arg_float(ctx, "eps", nullptr));
  a.inv_bc1 = float(1.0 / (1.0 - std::pow(double(a.beta1), double(t))));
  a.inv_bc2 = float(1.0 / (1.0 - std::pow(double(a.beta2), double(t))));
  a.inv_world = 1.f / float(world);

  // 1. Broadcast: part `rank` from rank 0's input tensors, then the other parts from peers.
  pkb::host::barrier(ctx->pads, rank, world, kStart);
  const int64_t lo = rank * d.part, hi = lo + d.part;
  for (int tsr = 0; tsr < 4; ++tsr) {
    int64_t a0 = std::max(lo, d.off[tsr]), a1 = std::min(hi, d.off[tsr + 1]);
    if (a0 >= a1) continue;
    const T* src = static_cast<const T*>(ctx->peer_ptr(ctx, in[2 + tsr].data, 0)) + (a0 - d.off[tsr]);
    memcpy(flat_p + a0, src, (a1 - a0) * sizeof(T));
  }
  pkb::host::barrier(ctx->pads, rank, world, kChunks);
  for (int j = 1; j < world; ++j) {
    int peer = (rank + j) % world;
    T* chunk = flat_p + peer * d.part;
    memcpy(chunk, ctx->peer_ptr(ctx, chunk, peer), d.part * sizeof(T));
  }

  // 2. Forward, then region B's gradients (w2, b2).
  at::Tensor w1 = view(flat_p + d.off[0], {d.hid, d.din}), b1 = view(flat_p + d.off[1], {d.hid});
  at::Tensor w2 = view(flat_p + d.off[2], {d.dout, d.hid}), b2 = view(flat_p + d.off[3], {d.dout});
  at::Tensor h = at::relu(at::addmm(b1, x, w1.t()));
  at::Tensor o = (at::addmm(b2, h, w2.t()) - y).mul_(2.0 / double(d.nl * d.dout));
  at::Tensor gw2 = view(grad + d.off[2], {d.dout, d.hid});
  at::mm_out(gw2, o.t(), h);
  view(grad + d.off[3], {d.dout}).copy_(o.sum(0));

  Fused<T> f;
  f.grad = grad;
  f.flat_p = flat_p;
  f.m_in = static_cast<const T*>(in[6].data);
  f.v_in = static_cast<const T*>(in[7].data);
  f.m_out = static_cast<T*>(out[4].data);
  f.v_out = static_cast<T*>(out[5].data);
  for (int k = 0; k < 4; ++k) f.out[k] = static_cast<T*>(out[k].data);
  for (int k = 0; k < 5; ++k) f.off[k] = d.off[k];
  f.part_begin = lo;
  f.bases = ctx->heap_bases;
  f.rank = rank;
  f.world = world;

  // 3a. Region B's exchange on a second thread, overlapping region A's gradients.
  Fused<T> fb = f;
  fb.begin = std::max(lo, d.off[2]);
  fb.end = std::max(fb.begin, hi);
  std::thread side([ctx, fb, a, rank, world] {
    pkb::host::barrier(ctx->pads, rank, world, kRegionB);
    reduce_adam_push(fb, a);
  });

  // 2b. Region A's gradients (w1, b1).
  at::Tensor dpre = o.mm(w2).mul_(h > 0);
  at::Tensor gw1 = view(grad + d.off[0], {d.hid, d.din});
  at::mm_out(gw1, dpre.t(), x);
  view(grad + d.off[1], {d.hid}).copy_(dpre.sum(0));

  // 3b. Region A's exchange.
  pkb::host::barrier(ctx->pads, rank, world, kRegionA);
  f.begin = lo;
  f.end = std::min(hi, d.off[2]);
  reduce_adam_push(f, a);

  // 4. Join; every push has landed everywhere after the last barrier.
  side.join();
  pkb::host::barrier(ctx->pads, rank, world, kEnd);
  return 0;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int n_in, const pkb_tensor*, int n_out) {
  State* s = new State;
  ctx->user = s;
  int dt = in[0].dtype;
  if (n_in != 9 || n_out != 6 || (dt != PKB_BF16 && dt != PKB_FP16 && dt != PKB_FP32)) {
    ctx->set_error(ctx, "fsdp_zero2_adam_step: needs the problem's 9 inputs and 6 outputs in bf16, fp16 or fp32");
    return 1;
  }
  Dims d = dims_of(in, ctx->world);
  if (d.part * ctx->world != d.P || in[6].sizes[0] != d.part) {
    ctx->set_error(ctx, "fsdp_zero2_adam_step: W must divide the parameter count");
    return 1;
  }
  size_t es = pkb_dtype_size(dt);
  s->flat_p = ctx->symm_alloc(ctx, d.P * es);
  s->grad = ctx->symm_alloc(ctx, d.P * es);
  if (!s->flat_p || !s->grad) {
    ctx->set_error(ctx, "fsdp_zero2_adam_step: the symmetric heap is too small (--heap-size)");
    return 1;
  }
  return 0;
}

PKB_EXPORT void pkb_finalize(pkb_ctx* ctx) {
  delete static_cast<State*>(ctx->user);
  ctx->user = nullptr;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  State* s = static_cast<State*>(ctx->user);
  switch (in[0].dtype) {
    case PKB_BF16: return step<c10::BFloat16>(ctx, s, in, out);
    case PKB_FP16: return step<c10::Half>(ctx, s, in, out);
    default: return step<float>(ctx, s, in, out);
  }
}
