// sci_distributed_rfft2 on the CPU device: rank r holds columns r, x (B, H, X/W) fp32, of a
// real field and returns rows r of its rfft2 with norm "ortho", (B, H/W, X/2 + 1) complex64.
//
// Algorithm (the same as the CUDA version; a small FFT of its own stands in for cuFFT:
// radix-2 in fp64 for powers of two, a plain DFT otherwise):
//  1. a real FFT along H of the local columns (rows k > H/2 are the conjugates of H - k);
//  2. pack + all-to-all in one pass: for every destination rank d, frequency k of its rows
//     and column c, the value goes straight into d's receive buffer (row k - d*H/W, column
//     r*X/W + c) through d's peer pointer;
//  3. a barrier, then a complex FFT along X of the own rows;
//  4. unpack: the first X/2 + 1 frequencies, scaled once by 1/sqrt(H X), into the output.
// The receive buffers are symmetric (pkb_init's symm_alloc); batches go in chunks that fit
// kBufferBytes, alternating between two buffers by a counter that runs across calls, so a
// buffer is never overwritten while in use and no trailing barrier is needed (a peer
// writes chunk s + 2 only after the barrier of chunk s + 1, which I enter after my FFT of
// chunk s). Barriers on channel 0 of the signal pads (pkb keeps the last channel).
#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;
constexpr size_t kBufferBytes = size_t{32} << 20;

using cf = std::complex<float>;
using cd = std::complex<double>;

// In-place forward DFT of a (length n): iterative radix-2 when n is a power of two, the
// O(n^2) sum otherwise (correct, slow; the CI sizes are powers of two).
void dft(std::vector<cd>& a) {
  const size_t n = a.size();
  const double pi = std::acos(-1.0);
  if (n & (n - 1)) {
    std::vector<cd> out(n);
    for (size_t k = 0; k < n; ++k) {
      cd acc = 0;
      for (size_t j = 0; j < n; ++j) acc += a[j] * std::polar(1.0, -2 * pi * double((j * k) % n) / double(n));
      out[k] = acc;
    }
    a = out;
    return;
  }
  for (size_t i = 1, j = 0; i < n; ++i) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  static thread_local std::vector<cd> roots;  // roots[j] = exp(-2 pi i j / n), j < n/2
  if (roots.size() != n / 2) {
    roots.resize(n / 2);
    for (size_t j = 0; j < n / 2; ++j) roots[j] = std::polar(1.0, -2 * pi * double(j) / double(n));
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    for (size_t i = 0; i < n; i += len)
      for (size_t j = 0; j < len / 2; ++j) {
        cd u = a[i + j], v = a[i + j + len / 2] * roots[j * (n / len)];
        a[i + j] = u + v;
        a[i + j + len / 2] = u - v;
      }
  }
}

struct State {
  int64_t b = 0, h = 0, xl = 0, x = 0, hl = 0, xf = 0, chunk = 1;
  cf* recv[2] = {nullptr, nullptr};
  uint64_t seq = 0;
};

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int, const pkb_tensor* out, int) {
  State* s = new State;
  ctx->user = s;
  if (in[0].dtype != PKB_FP32 || out[0].dtype != PKB_COMPLEX64) {
    ctx->set_error(ctx, "sci_distributed_rfft2: needs fp32 input and complex64 output");
    return 1;
  }
  s->b = in[0].sizes[0];
  s->h = in[0].sizes[1];
  s->xl = in[0].sizes[2];
  s->x = s->xl * ctx->world;
  s->hl = out[0].sizes[1];
  s->xf = out[0].sizes[2];
  size_t per_batch = size_t(s->hl) * s->x * sizeof(cf);
  s->chunk = std::max<int64_t>(1, std::min<int64_t>(s->b, int64_t(kBufferBytes / std::max<size_t>(per_batch, 1))));
  for (auto& r : s->recv) {
    r = static_cast<cf*>(ctx->symm_alloc(ctx, per_batch * s->chunk));
    if (!r) {
      ctx->set_error(ctx, "sci_distributed_rfft2: the symmetric heap is too small (raise --heap-size)");
      return 1;
    }
  }
  return 0;
}

PKB_EXPORT void pkb_finalize(pkb_ctx* ctx) {
  delete static_cast<State*>(ctx->user);
  ctx->user = nullptr;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  State* s = static_cast<State*>(ctx->user);
  const int rank = ctx->rank, world = ctx->world;
  const int64_t hf = s->h / 2 + 1;
  const float scale = float(1.0 / std::sqrt(double(s->h) * double(s->x)));
  // 1. FFT along H of every local column, unnormalised, the first H/2 + 1: (B, H/2 + 1, Xl)
  const float* x = static_cast<const float*>(in[0].data);
  std::vector<cf> half(size_t(s->b) * hf * s->xl);
  std::vector<cd> col(s->h);
  for (int64_t b = 0; b < s->b; ++b)
    for (int64_t c = 0; c < s->xl; ++c) {
      for (int64_t k = 0; k < s->h; ++k) col[k] = x[(b * s->h + k) * s->xl + c];
      dft(col);
      for (int64_t k = 0; k < hf; ++k) half[(b * hf + k) * s->xl + c] = cf(col[k]);
    }
  const cf* f = half.data();
  cf* y = static_cast<cf*>(out[0].data);
  std::vector<cd> row(s->x);

  for (int64_t b0 = 0; b0 < s->b; b0 += s->chunk) {
    int64_t nb = std::min(s->chunk, s->b - b0);
    cf* mine = s->recv[s->seq++ % 2];
    // 2. pack + all-to-all: my columns of every rank's rows, into that rank's buffer
    for (int d = 0; d < world; ++d) {
      cf* dst = static_cast<cf*>(ctx->peer_ptr(ctx, mine, d));
      for (int64_t bb = 0; bb < nb; ++bb)
        for (int64_t kl = 0; kl < s->hl; ++kl) {
          int64_t k = d * s->hl + kl;
          bool direct = k < hf;
          const cf* src = f + ((b0 + bb) * hf + (direct ? k : s->h - k)) * s->xl;
          cf* row = dst + (bb * s->hl + kl) * s->x + rank * s->xl;
          for (int64_t c = 0; c < s->xl; ++c) row[c] = direct ? src[c] : std::conj(src[c]);
        }
    }
    pkb::host::barrier(ctx->pads, rank, world, kChannel);
    // 3. complex FFT along X of my rows; 4. unpack the first X/2 + 1, scaled
    for (int64_t i = 0; i < nb * s->hl; ++i) {
      for (int64_t j = 0; j < s->x; ++j) row[j] = cd(mine[i * s->x + j]);
      dft(row);
      cf* dst = y + (b0 * s->hl + i) * s->xf;
      for (int64_t j = 0; j < s->xf; ++j) dst[j] = cf(row[j] * double(scale));
    }
  }
  return 0;
}
