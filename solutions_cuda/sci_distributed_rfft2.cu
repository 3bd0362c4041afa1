// sci_distributed_rfft2 on CUDA, no NCCL: rank r holds columns r, x (B, H, X/W) fp32, of a
// real field and returns rows r of its rfft2 with norm "ortho", (B, H/W, X/2 + 1) complex64.
//
// Algorithm (a pencil FFT whose transpose is fused into the pack and unpack around cuFFT):
//  1. cuFFT R2C along H on the local columns (half the work of the reference's complex FFT:
//     rows k > H/2 are the conjugates of rows H - k, rebuilt on the fly).
//  2. Pack + all-to-all in one kernel: for every destination rank d, the thread for
//     (d, b, k, c) reads F[b, k, c] (or conj(F[b, H - k, c])) and stores it straight into
//     d's receive buffer at row k - d*H/W, column r*X/W + c (NVLink stores, coalesced along
//     c). No separate pack copy, no NCCL all-to-all, no unpack copy on the receiving side.
//  3. A barrier; then every rank has its H/W rows complete and runs cuFFT C2C along X in
//     place on its receive buffer.
//  4. Unpack: the first X/2 + 1 frequencies, scaled once by 1/sqrt(H X) (both "ortho"
//     factors), into the output.
// The receive buffers are symmetric (pkb_init's symm_alloc) and bounded: batches go through
// in chunks that fit kBufferBytes, alternating between two buffers by a chunk counter that
// runs across calls. A peer can only write chunk s + 2 after the barrier of chunk s + 1,
// for which this rank signals after its FFT of chunk s: so a buffer is never overwritten
// while in use, and no trailing barrier is needed. Each rank sends (W-1)/W of its
// H-transformed columns, the transpose minimum.
//
// Everything runs on ctx->stream; the barrier is a one-block kernel on channel 0 of the
// signal pads, so no data kernel spins (ranks sharing a GPU make progress).
#include <cuda_runtime.h>
#include <cufft.h>
#include <stdint.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;                         // our barrier's channel (pkb keeps the last one)
constexpr int kMaxWorld = 64;                       // peer pointer tables travel as kernel parameters
constexpr int kThreads = 256;
constexpr size_t kBufferBytes = size_t{96} << 20;   // per receive buffer (two of them in the heap)

struct Peers {
  float2* buf[kMaxWorld];  // every rank's receive buffer of the current chunk, as I address it
};

struct State {
  int64_t b = 0, h = 0, xl = 0, x = 0, hl = 0, xf = 0, chunk = 1;
  float2* half = nullptr;          // R2C output (B, H/2 + 1, Xl), local
  float2* recv[2] = {nullptr, nullptr};  // symmetric receive buffers, (chunk * Hl, X) each
  cufftHandle r2c = 0, c2c = 0, c2c_tail = 0;
  bool have_r2c = false, have_c2c = false, have_tail = false;
  uint64_t seq = 0;  // chunks done so far, across calls: picks the buffer

  ~State() {
    cudaDeviceSynchronize();
    if (have_r2c) cufftDestroy(r2c);
    if (have_c2c) cufftDestroy(c2c);
    if (have_tail) cufftDestroy(c2c_tail);
    cudaFree(half);
  }
};

__global__ void barrier_kernel(uint32_t* const* pads, int rank, int world) {
  pkb::dev::barrier_block(pads, rank, world, kChannel);
}

int blocks_for(pkb_ctx* ctx, int64_t work) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device);
  return int(std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, int64_t(8) * sms));
}

// Batches [b0, b0 + nb): thread (d, bb, kl, c) sends H-frequency k = d*Hl + kl of my column c
// to rank d, at its row bb*Hl + kl, column rank*Xl + c.
__global__ void pack_send(const float2* half, Peers peers, int world, int rank, int64_t b0, int64_t nb, int64_t h,
                          int64_t hl, int64_t xl, int64_t x) {
  int64_t hf = h / 2 + 1, per_dest = nb * hl * xl, total = per_dest * world;
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t g = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; g < total; g += stride) {
    int64_t d = g / per_dest, rest = g - d * per_dest;
    int64_t c = rest % xl, row = rest / xl;  // row = bb * hl + kl
    int64_t bb = row / hl, kl = row - bb * hl, k = d * hl + kl;
    const float2* col = half + (b0 + bb) * hf * xl + c;
    float2 v;
    if (k < hf) {
      v = col[k * xl];
    } else {
      v = col[(h - k) * xl];
      v.y = -v.y;
    }
    peers.buf[d][row * x + rank * xl + c] = v;
  }
  __threadfence_system();  // my stores reach the peers before the barrier's signal
}

// out[row, j] = buf[row, j] * scale for the chunk's rows (bb*Hl + kl) and j < X/2 + 1.
__global__ void unpack(const float2* buf, float2* out, int64_t rows, int64_t x, int64_t xf, float scale) {
  int64_t total = rows * xf, stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t g = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; g < total; g += stride) {
    int64_t row = g / xf, j = g - row * xf;
    float2 v = buf[row * x + j];
    out[g] = make_float2(v.x * scale, v.y * scale);
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int, const pkb_tensor* out, int) {
  State* s = new State;
  ctx->user = s;
  if (in[0].dtype != PKB_FP32 || out[0].dtype != PKB_COMPLEX64 || ctx->world > kMaxWorld) {
    ctx->set_error(ctx, "sci_distributed_rfft2: needs fp32 input, complex64 output, at most 64 ranks");
    return 1;
  }
  s->b = in[0].sizes[0];
  s->h = in[0].sizes[1];
  s->xl = in[0].sizes[2];
  s->x = s->xl * ctx->world;
  s->hl = out[0].sizes[1];
  s->xf = out[0].sizes[2];
  size_t per_batch = size_t(s->hl) * s->x * sizeof(float2);
  s->chunk = std::clamp<int64_t>(int64_t(kBufferBytes / std::max<size_t>(per_batch, 1)), 1, std::max<int64_t>(s->b, 1));
  for (auto& r : s->recv) {
    r = static_cast<float2*>(ctx->symm_alloc(ctx, per_batch * s->chunk));
    if (!r) {
      ctx->set_error(ctx, "sci_distributed_rfft2: the symmetric heap is too small (raise --heap-size)");
      return 1;
    }
  }
  PKB_CHECK(cudaMalloc(&s->half, size_t(s->b) * (s->h / 2 + 1) * s->xl * sizeof(float2)));
  // R2C along H for one batch: Xl transforms, element stride Xl, neighbouring columns 1 apart.
  int n_h[1] = {int(s->h)}, in_h[1] = {int(s->h)}, on_h[1] = {int(s->h / 2 + 1)};
  PKB_CHECK(cufftPlanMany(&s->r2c, 1, n_h, in_h, int(s->xl), 1, on_h, int(s->xl), 1, CUFFT_R2C, int(s->xl)));
  s->have_r2c = true;
  // C2C along X, in place, rows contiguous: one plan for a full chunk, one for the last.
  int n_x[1] = {int(s->x)};
  PKB_CHECK(cufftPlanMany(&s->c2c, 1, n_x, nullptr, 1, int(s->x), nullptr, 1, int(s->x), CUFFT_C2C, int(s->chunk * s->hl)));
  s->have_c2c = true;
  int64_t tail = s->b % s->chunk;
  if (tail) {
    PKB_CHECK(cufftPlanMany(&s->c2c_tail, 1, n_x, nullptr, 1, int(s->x), nullptr, 1, int(s->x), CUFFT_C2C, int(tail * s->hl)));
    s->have_tail = true;
  }
  return 0;
}

PKB_EXPORT void pkb_finalize(pkb_ctx* ctx) {
  delete static_cast<State*>(ctx->user);
  ctx->user = nullptr;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  State* s = static_cast<State*>(ctx->user);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  const int rank = ctx->rank, world = ctx->world;
  float* x = static_cast<float*>(in[0].data);  // cuFFT's R2C takes a non-const pointer; it does not write it
  float2* y = static_cast<float2*>(out[0].data);
  const int64_t hf = s->h / 2 + 1;
  const float scale = float(1.0 / std::sqrt(double(s->h) * double(s->x)));

  PKB_CHECK(cufftSetStream(s->r2c, stream));
  PKB_CHECK(cufftSetStream(s->c2c, stream));
  if (s->have_tail) PKB_CHECK(cufftSetStream(s->c2c_tail, stream));
  for (int64_t b = 0; b < s->b; ++b)
    PKB_CHECK(cufftExecR2C(s->r2c, x + b * s->h * s->xl, reinterpret_cast<cufftComplex*>(s->half + b * hf * s->xl)));

  int threads = (world + 31) / 32 * 32;
  for (int64_t b0 = 0; b0 < s->b; b0 += s->chunk) {
    int64_t nb = std::min(s->chunk, s->b - b0);
    float2* mine = s->recv[s->seq++ % 2];
    Peers peers;
    for (int p = 0; p < world; ++p) peers.buf[p] = static_cast<float2*>(ctx->peer_ptr(ctx, mine, p));
    int64_t work = int64_t(world) * nb * s->hl * s->xl;
    pack_send<<<blocks_for(ctx, work), kThreads, 0, stream>>>(s->half, peers, world, rank, b0, nb, s->h, s->hl, s->xl, s->x);
    barrier_kernel<<<1, threads, 0, stream>>>(ctx->pads_dev, rank, world);
    cufftHandle plan = nb == s->chunk ? s->c2c : s->c2c_tail;
    PKB_CHECK(cufftExecC2C(plan, reinterpret_cast<cufftComplex*>(mine), reinterpret_cast<cufftComplex*>(mine), CUFFT_FORWARD));
    unpack<<<blocks_for(ctx, nb * s->hl * s->xf), kThreads, 0, stream>>>(mine, y + b0 * s->hl * s->xf, nb * s->hl, s->x,
                                                                        s->xf, scale);
  }
  PKB_CHECK(cudaGetLastError());
  return 0;
}
