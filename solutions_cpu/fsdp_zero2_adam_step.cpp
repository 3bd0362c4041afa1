// fsdp_zero2_adam_step on the CPU device: the algorithm of solutions_cuda/
// fsdp_zero2_adam_step.cu over the shared-memory heap, so that its indexing is tested
// without a GPU. A ZeRO-2 training step of the MLP Linear(din, hid) -> ReLU ->
// Linear(hid, dout) (MSE loss) with Adam: the flat parameters (w1, b1, w2, b2; P
// elements) come from rank 0; rank r owns part r ([r part, (r+1) part), part = P / W).
//
// Algorithm (as the CUDA version):
//  1. Broadcast by pull: rank r copies part r of rank 0's input tensors into its own flat
//     copy `flat_p` (symmetric); barrier; then every other part j from rank j's flat_p.
//  2. Forward and backward (a plain fp32-accumulating GEMM stands in for cuBLAS); the
//     gradients land in the symmetric flat buffer `grad`, region B (w2, b2: the flat
//     tail) first.
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
#include <vector>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

// bf16 is the top half of an fp32 (rounded to nearest even); fp16 is _Float16.
struct bf16 {
  uint16_t bits;
  bf16() = default;
  explicit bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    bits = (u & 0x7fffffffu) > 0x7f800000u ? uint16_t(u >> 16 | 0x40) : uint16_t((u + 0x7fffu + (u >> 16 & 1)) >> 16);
  }
  explicit operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
};

// Row-major C (m, n) = beta C + op(A) (m, k) op(B) (k, n) (leading dims: row pitches),
// accumulated in fp32 and rounded once: what cuBLAS does in the CUDA version.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
          int64_t ldc, float beta) {
  std::vector<float> af(m * k), bf(k * n), acc(n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < k; ++q) af[i * k + q] = float(ta ? a[q * lda + i] : a[i * lda + q]);
  for (int64_t q = 0; q < k; ++q)
    for (int64_t j = 0; j < n; ++j) bf[q * n + j] = float(tb ? b[j * ldb + q] : b[q * ldb + j]);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) acc[j] = beta == 0.f ? 0.f : beta * float(c[i * ldc + j]);
    for (int64_t q = 0; q < k; ++q) {
      float x = af[i * k + q];
      const float* row = &bf[q * n];
      for (int64_t j = 0; j < n; ++j) acc[j] += x * row[j];
    }
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = T(acc[j]);
  }
}

enum Channel { kStart = 0, kChunks = 1, kRegionB = 2, kRegionA = 3, kEnd = 4 };

struct Dims {
  int64_t nl, din, hid, dout, P, part;
  int64_t off[5];  // flat offsets of w1, b1, w2, b2 and the end (P)
};

struct State {
  void* flat_p = nullptr;  // symmetric: rank 0's parameters, flat
  void* grad = nullptr;    // symmetric: this rank's flat gradient
  std::vector<float> act_h, act_out, act_dpre;  // local activations (as bytes enough for T)
};

// dst[j] = sum over the rows of a (rows, cols), in fp32: a bias gradient.
template <class T>
void col_sum(const T* a, T* dst, int64_t rows, int64_t cols) {
  std::vector<float> acc(cols, 0.f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) acc[j] += float(a[r * cols + j]);
  for (int64_t j = 0; j < cols; ++j) dst[j] = T(acc[j]);
}

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
  T *h = reinterpret_cast<T*>(s->act_h.data()), *o = reinterpret_cast<T*>(s->act_out.data());
  T* dpre = reinterpret_cast<T*>(s->act_dpre.data());
  const T* x = static_cast<const T*>(in[0].data);
  const T* y = static_cast<const T*>(in[1].data);

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

  // 2. Forward, then region B's gradients (w2, b2), as the CUDA version's kernels do.
  const T *w1 = flat_p + d.off[0], *b1 = flat_p + d.off[1], *w2 = flat_p + d.off[2], *b2 = flat_p + d.off[3];
  for (int64_t i = 0; i < d.nl * d.hid; ++i) h[i] = b1[i % d.hid];
  gemm<T>(false, true, d.nl, d.hid, d.din, x, d.din, w1, d.din, h, d.hid, 1.f);
  for (int64_t i = 0; i < d.nl * d.hid; ++i) h[i] = T(std::max(float(h[i]), 0.f));
  for (int64_t i = 0; i < d.nl * d.dout; ++i) o[i] = b2[i % d.dout];
  gemm<T>(false, true, d.nl, d.dout, d.hid, h, d.hid, w2, d.hid, o, d.dout, 1.f);
  const float scale = float(2.0 / double(d.nl * d.dout));
  for (int64_t i = 0; i < d.nl * d.dout; ++i) o[i] = T((float(o[i]) - float(y[i])) * scale);
  gemm<T>(true, false, d.dout, d.hid, d.nl, o, d.dout, h, d.hid, grad + d.off[2], d.hid, 0.f);
  col_sum(o, grad + d.off[3], d.nl, d.dout);

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
  gemm<T>(false, false, d.nl, d.hid, d.dout, o, d.dout, w2, d.hid, dpre, d.hid, 0.f);
  for (int64_t i = 0; i < d.nl * d.hid; ++i)
    if (!(float(h[i]) > 0.f)) dpre[i] = T(0.f);
  gemm<T>(true, false, d.hid, d.din, d.nl, dpre, d.hid, x, d.din, grad + d.off[0], d.din, 0.f);
  col_sum(dpre, grad + d.off[1], d.nl, d.hid);

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
  s->act_h.resize(d.nl * d.hid);  // a float per element holds any T
  s->act_out.resize(d.nl * d.dout);
  s->act_dpre.resize(d.nl * d.hid);
  return 0;
}

PKB_EXPORT void pkb_finalize(pkb_ctx* ctx) {
  delete static_cast<State*>(ctx->user);
  ctx->user = nullptr;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  State* s = static_cast<State*>(ctx->user);
  switch (in[0].dtype) {
    case PKB_BF16: return step<bf16>(ctx, s, in, out);
    case PKB_FP16: return step<_Float16>(ctx, s, in, out);
    default: return step<float>(ctx, s, in, out);
  }
}
