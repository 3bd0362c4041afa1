// cp_ring_attention on the CPU device: the CPU twin of solutions_cuda/cp_ring_attention.cu
// (same ring protocol, buffers and indexing; the attention is plain loops here).
//
// Causal ring attention with zig-zag shards: rank r holds q, k, v (B, S, H, D) for chunks r
// and 2W-1-r of the sequence. At step s (0..W-1) rank r holds rank (r-s)'s K/V block and
// (1) pushes it into the next rank's receive slot for step s+1 (two slots per rank in the
// symmetric heap, used alternately: step s+1 lands in slot (s+1) % 2), then signals "ready"
// on the next rank's pad, while (2) attending to it: step 0 is its own block under the
// causal mask (by global position), a block from an earlier rank is seen by all its
// queries but only in its first chunk, a block from a later rank whole but only by its
// second chunk. The running output, max and sum (fp32, online softmax) carry over the
// steps; the output is normalised and rounded at the end. Each rank receives W-1 blocks.
//
// Flow control: slot (s+1) % 2 of the next rank last held its step s-1 block, so from
// step 2 on a rank waits for the next rank's "done with step s-1" acknowledgement before
// pushing; a rank acknowledges steps 1..W-3 to the previous rank once it has attended to
// them and forwarded them. Signal-pad channels: 0 the call's opening barrier, 1 ready,
// 2 acknowledgements. The opening barrier makes sure no rank writes a slot its owner is
// still reading from the previous call.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

constexpr int kBarrier = 0, kReady = 1, kAck = 2;

struct bf16 {
  uint16_t bits;
};

float to_float(float v) { return v; }
float to_float(_Float16 v) { return v; }
float to_float(bf16 v) {
  uint32_t u = uint32_t(v.bits) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
template <class T>
T from_float(float f) {
  return T(f);
}
template <>
bf16 from_float<bf16>(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t(u >> 16 | 0x40)};
  return {uint16_t((u + 0x7fffu + (u >> 16 & 1)) >> 16)};
}

struct State {
  void* slot_k[2] = {nullptr, nullptr};
  void* slot_v[2] = {nullptr, nullptr};
  std::vector<float> acc, m, l;
};

struct Shape {
  int64_t b, s, h, d;
  size_t elems() const { return size_t(b * s * h * d); }
};

// Global position of local row i of rank r (zig-zag: chunks r and 2W-1-r of c rows each).
int64_t position(int64_t i, int64_t c, int r, int w) { return i < c ? r * c + i : (2 * w - 1 - r) * c + (i - c); }

// Folds keys [k0, k0+nk) of block (k, v) into queries [q0, q0+nq); `masked`: the causal
// mask of the rank's own block.
template <class T>
void attend(State& st, const Shape& sh, const T* q, const T* k, const T* v, int64_t q0, int64_t nq, int64_t k0,
            int64_t nk, bool masked, int rank, int world) {
  const int64_t c = sh.s / 2, d = sh.d;
  const float scale = 1.0f / sqrtf(float(d));
  std::vector<float> qr(d);
  for (int64_t b = 0; b < sh.b; ++b)
    for (int64_t i = q0; i < q0 + nq; ++i)
      for (int64_t h = 0; h < sh.h; ++h) {
        const size_t row = size_t((b * sh.s + i) * sh.h + h);
        for (int64_t e = 0; e < d; ++e) qr[e] = to_float(q[row * d + e]) * scale;
        float* o = &st.acc[row * d];
        float& m = st.m[row];
        float& l = st.l[row];
        const int64_t pi = position(i, c, rank, world);
        for (int64_t j = k0; j < k0 + nk; ++j) {
          if (masked && position(j, c, rank, world) > pi) continue;
          const size_t krow = size_t((b * sh.s + j) * sh.h + h) * d;
          float sc = 0.f;
          for (int64_t e = 0; e < d; ++e) sc += qr[e] * to_float(k[krow + e]);
          if (sc > m) {
            const float corr = expf(m - sc);  // 0 when m is -inf
            l *= corr;
            for (int64_t e = 0; e < d; ++e) o[e] *= corr;
            m = sc;
          }
          const float p = expf(sc - m);
          l += p;
          for (int64_t e = 0; e < d; ++e) o[e] += p * to_float(v[krow + e]);
        }
      }
}

template <class T>
int run(pkb_ctx* ctx, const pkb_tensor* in, pkb_tensor* out) {
  State& st = *static_cast<State*>(ctx->user);
  const int r = ctx->rank, w = ctx->world, prev = (r + w - 1) % w, next = (r + 1) % w;
  const Shape sh{in[0].sizes[0], in[0].sizes[1], in[0].sizes[2], in[0].sizes[3]};
  const size_t bytes = sh.elems() * sizeof(T);
  const T* q = static_cast<const T*>(in[0].data);
  std::fill(st.acc.begin(), st.acc.end(), 0.f);
  std::fill(st.m.begin(), st.m.end(), -INFINITY);
  std::fill(st.l.begin(), st.l.end(), 0.f);
  const int64_t c = sh.s / 2;

  pkb::host::barrier(ctx->pads, r, w, kBarrier);
  for (int s = 0; s < w; ++s) {
    const int src = (r - s + w) % w;
    const void* ck = s == 0 ? in[1].data : st.slot_k[s % 2];
    const void* cv = s == 0 ? in[2].data : st.slot_v[s % 2];
    if (s >= 1) pkb::host::wait_signal(ctx->pads[r], pkb::host::slot(kReady, prev, w));
    if (s < w - 1) {
      if (s >= 2) pkb::host::wait_signal(ctx->pads[r], pkb::host::slot(kAck, next, w));
      memcpy(ctx->peer_ptr(ctx, st.slot_k[(s + 1) % 2], next), ck, bytes);
      memcpy(ctx->peer_ptr(ctx, st.slot_v[(s + 1) % 2], next), cv, bytes);
      pkb::host::put_signal(ctx->pads[next], pkb::host::slot(kReady, r, w));
    }
    const T* k = static_cast<const T*>(ck);
    const T* v = static_cast<const T*>(cv);
    if (s == 0)
      attend(st, sh, q, k, v, 0, sh.s, 0, sh.s, true, r, w);
    else if (src < r)
      attend(st, sh, q, k, v, 0, sh.s, 0, c, false, r, w);
    else
      attend(st, sh, q, k, v, c, sh.s - c, 0, sh.s, false, r, w);
    if (s >= 1 && s <= w - 3) pkb::host::put_signal(ctx->pads[prev], pkb::host::slot(kAck, r, w));
  }
  T* o = static_cast<T*>(out[0].data);
  for (size_t row = 0; row < st.m.size(); ++row)
    for (int64_t e = 0; e < sh.d; ++e) o[row * sh.d + e] = from_float<T>(st.acc[row * sh.d + e] / st.l[row]);
  return 0;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int, const pkb_tensor*, int) {
  State* st = new State;
  ctx->user = st;
  const Shape sh{in[0].sizes[0], in[0].sizes[1], in[0].sizes[2], in[0].sizes[3]};
  if (sh.s % 2) {
    ctx->set_error(ctx, "cp_ring_attention: the zig-zag shard needs an even S");
    return 1;
  }
  st->acc.resize(sh.elems());
  st->m.resize(size_t(sh.b * sh.s * sh.h));
  st->l.resize(size_t(sh.b * sh.s * sh.h));
  if (ctx->world > 1) {
    const size_t bytes = sh.elems() * pkb_dtype_size(in[0].dtype);
    for (int i = 0; i < 2; ++i) {
      st->slot_k[i] = ctx->symm_alloc(ctx, bytes);
      st->slot_v[i] = ctx->symm_alloc(ctx, bytes);
      if (!st->slot_k[i] || !st->slot_v[i]) {
        ctx->set_error(ctx, "cp_ring_attention: symmetric heap full (needs 4 K/V blocks; raise --heap-size)");
        return 1;
      }
    }
  }
  return 0;
}

PKB_EXPORT void pkb_finalize(pkb_ctx* ctx) {
  delete static_cast<State*>(ctx->user);
  ctx->user = nullptr;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  switch (in[0].dtype) {
    case PKB_BF16: return run<bf16>(ctx, in, out);
    case PKB_FP16: return run<_Float16>(ctx, in, out);
    case PKB_FP32: return run<float>(ctx, in, out);
    default: ctx->set_error(ctx, "cp_ring_attention: dtype must be bf16, fp16 or fp32"); return 1;
  }
}
