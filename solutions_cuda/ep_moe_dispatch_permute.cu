// ep_moe_dispatch_permute on CUDA, no NCCL, DeepEP-style: every (token, expert) copy is
// written straight from hidden_states into its place in the expert owner's output buffer
// through the symmetric heap (NVLink stores), so there is no separate permute, staging
// buffer, all-to-all or regroup pass: each row crosses the GPU's memory system once.
//
// Algorithm, all on ctx->stream:
//   1. route_kernel, one block per expert e: routing_map[e] = expert_mask[e].sum(k), and
//      a block-wide scan gives each routed token its position p among e's tokens; the
//      compact token list of e goes to a scratch buffer, and e's count into row `rank` of
//      every rank's count table (W, E) in the symmetric heap (the counts exchange).
//   2. barrier (signal pads, channel 0): every table is complete, and every rank is inside
//      the call, so its output (poisoned by pkb before the call) may be written.
//   3. offsets_kernel, prefix sums over the table: for each expert e of owner d = e / Le
//      (local index j), the first row of this rank's tokens in d's buffer = the rows of d's
//      local experts before j from all sources + the rows of expert e from sources below
//      this rank; and e's first row in this rank's own expert-major order (the mapping).
//   4. dispatch_kernel, one warp per row of the expert-major order: row i = (e, p) is found
//      by a binary search over the own offsets; its token id goes into the permutation
//      mapping and its hidden row (16-byte vectors) into d's buffer at dest[e] + p.
//   5. barrier: every rank's rows have landed in every buffer; a peer refills my count
//      table only after this barrier, when nothing reads it any more.
// The received row count (out[0].sizes[0]) is sum(output_splits), a host input, so no
// device-to-host sync is needed. The barriers are one-block kernels and nothing else
// spins, so ranks sharing a GPU still make progress.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>
#include <string>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;    // our barriers' signal-pad channel (pkb keeps the last one)
constexpr int kMaxWorld = 64;  // peer pointer tables travel as kernel parameters
constexpr int kScanThreads = 1024;
constexpr int kCopyThreads = 256;

struct Peers {
  void* p[kMaxWorld];
};

// What pkb_init makes and pkb_run reuses.
struct State {
  int* table = nullptr;  // (W, E) int32 in the symmetric heap: row s = rank s's counts
  Peers tables{};        // every rank's table
  int* list = nullptr;   // (E, M): the tokens of expert e, ascending, in row e
  int* count = nullptr;  // (E,)
  int* own = nullptr;    // (E + 1,): exclusive prefix of count (expert-major order)
  long long* dest = nullptr;  // (E,): expert e's first row in its owner's buffer

  ~State() {
    cudaDeviceSynchronize();  // nothing in flight may still use what we free
    cudaFree(list);
    cudaFree(count);
    cudaFree(own);
    cudaFree(dest);
  }
};

__global__ void barrier_kernel(uint32_t* const* pads, int rank, int world) {
  pkb::dev::barrier_block(pads, rank, world, kChannel);
}

cudaError_t barrier(pkb_ctx* ctx, cudaStream_t stream) {
  int threads = (ctx->world + 31) / 32 * 32;  // barrier_block needs a thread per rank
  barrier_kernel<<<1, threads, 0, stream>>>(ctx->pads_dev, ctx->rank, ctx->world);
  return cudaGetLastError();
}

// 1. One block per expert: routing map row, compact token list, count to every table.
__global__ void __launch_bounds__(kScanThreads)
    route_kernel(const float* __restrict__ mask, int64_t k, int64_t m, float* __restrict__ routing_map,
                 int* __restrict__ list, int* __restrict__ count, Peers tables, int rank, int world, int64_t experts) {
  using Scan = cub::BlockScan<int, kScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  const int64_t e = blockIdx.x;
  int base = 0;
  for (int64_t c = 0; c < m; c += kScanThreads) {
    const int64_t t = c + threadIdx.x;
    float r = 0.f;
    if (t < m) {
      for (int64_t j = 0; j < k; ++j) r += mask[(e * k + j) * m + t];
      routing_map[e * m + t] = r;
    }
    int flag = r > 0.f, p, total;
    Scan(temp).ExclusiveSum(flag, p, total);
    if (flag) list[e * m + base + p] = int(t);
    base += total;
    __syncthreads();  // temp is reused by the next chunk's scan
  }
  if (threadIdx.x == 0) count[e] = base;
  if (threadIdx.x < world) {
    static_cast<int*>(tables.p[threadIdx.x])[int64_t(rank) * experts + e] = base;
    __threadfence_system();
  }
}

// 3. Offsets from the full count table (one block).
__global__ void offsets_kernel(const int* __restrict__ table, const int* __restrict__ count, int64_t experts,
                               int64_t le, int rank, int world, int* __restrict__ own, long long* __restrict__ dest) {
  extern __shared__ long long colsum[];  // (E,): rows of expert x from all sources
  for (int64_t x = threadIdx.x; x < experts; x += blockDim.x) {
    long long s = 0;
    for (int src = 0; src < world; ++src) s += table[int64_t(src) * experts + x];
    colsum[x] = s;
  }
  __syncthreads();
  for (int64_t x = threadIdx.x; x <= experts; x += blockDim.x) {
    int o = 0;
    for (int64_t y = 0; y < x; ++y) o += count[y];
    own[x] = o;
    if (x == experts) continue;
    long long d = 0;
    for (int64_t y = x / le * le; y < x; ++y) d += colsum[y];
    for (int src = 0; src < rank; ++src) d += table[int64_t(src) * experts + x];
    dest[x] = d;
  }
}

// 4. One warp per row of the expert-major order: mapping entry and the row to its owner.
__global__ void __launch_bounds__(kCopyThreads)
    dispatch_kernel(const char* __restrict__ hidden, size_t row_bytes, const int* __restrict__ list,
                    const int* __restrict__ own_g, const long long* __restrict__ dest, int64_t m, int64_t experts,
                    int64_t le, int64_t* __restrict__ mapping, Peers outs) {
  extern __shared__ int own[];  // (E + 1,)
  for (int64_t x = threadIdx.x; x <= experts; x += blockDim.x) own[x] = own_g[x];
  __syncthreads();
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  const int64_t rows = own[experts];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32; i < rows; i += warps) {
    int64_t lo = 0, hi = experts - 1;  // the last expert x with own[x] <= i
    while (lo < hi) {
      int64_t mid = (lo + hi + 1) / 2;
      if (own[mid] <= i) lo = mid;
      else hi = mid - 1;
    }
    const int64_t x = lo, p = i - own[x];
    const int t = list[x * m + p];
    if (lane == 0) mapping[i] = t;
    const char* src = hidden + size_t(t) * row_bytes;
    char* dst = static_cast<char*>(outs.p[x / le]) + size_t(dest[x] + p) * row_bytes;
    if ((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | row_bytes) % 16 == 0) {
      const uint4* s = reinterpret_cast<const uint4*>(src);
      uint4* d = reinterpret_cast<uint4*>(dst);
      for (size_t v = lane; v < row_bytes / 16; v += 32) d[v] = s[v];
    } else {
      for (size_t b = lane; b < row_bytes; b += 32) dst[b] = src[b];
    }
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int, const pkb_tensor*, int) {
  State* s = new State;
  ctx->user = s;
  const int64_t e = in[1].sizes[0], m = in[1].sizes[2];
  if (ctx->world > kMaxWorld || !pkb_dtype_size(in[0].dtype) || e % ctx->world) {
    ctx->set_error(ctx, "ep_moe_dispatch_permute: more than 64 ranks, an unknown dtype, or E % W != 0");
    return 1;
  }
  s->table = static_cast<int*>(ctx->symm_alloc(ctx, size_t(ctx->world) * e * sizeof(int)));
  if (!s->table) {
    ctx->set_error(ctx, "ep_moe_dispatch_permute: symmetric heap full");
    return 1;
  }
  for (int d = 0; d < ctx->world; ++d) s->tables.p[d] = ctx->peer_ptr(ctx, s->table, d);
  PKB_CHECK(cudaMalloc(&s->list, size_t(e) * m * sizeof(int)));
  PKB_CHECK(cudaMalloc(&s->count, size_t(e) * sizeof(int)));
  PKB_CHECK(cudaMalloc(&s->own, size_t(e + 1) * sizeof(int)));
  PKB_CHECK(cudaMalloc(&s->dest, size_t(e) * sizeof(long long)));
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
  const int64_t m = in[0].sizes[0], n = in[0].sizes[1];
  const int64_t e = in[1].sizes[0], k = in[1].sizes[1], le = e / world;
  const size_t row_bytes = size_t(n) * pkb_dtype_size(in[0].dtype);
  const int64_t* output_splits = static_cast<const int64_t*>(in[3].data);  // host

  Peers outs{};
  for (int d = 0; d < world; ++d) outs.p[d] = ctx->peer_ptr(ctx, out[0].data, d);

  route_kernel<<<int(e), kScanThreads, 0, stream>>>(static_cast<const float*>(in[1].data), k, m,
                                                    static_cast<float*>(out[1].data), s->list, s->count, s->tables,
                                                    rank, world, e);
  PKB_CHECK(cudaGetLastError());
  PKB_CHECK(barrier(ctx, stream));
  offsets_kernel<<<1, 1024, size_t(e) * sizeof(long long), stream>>>(s->table, s->count, e, le, rank, world, s->own,
                                                                     s->dest);
  PKB_CHECK(cudaGetLastError());
  int sms = 0;
  PKB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device));
  const int64_t warps_per_block = kCopyThreads / 32;
  const int blocks = int(std::clamp<int64_t>((k * m + warps_per_block - 1) / warps_per_block, 1, 4 * int64_t(sms)));
  dispatch_kernel<<<blocks, kCopyThreads, size_t(e + 1) * sizeof(int), stream>>>(
      static_cast<const char*>(in[0].data), row_bytes, s->list, s->own, s->dest, m, e, le,
      static_cast<int64_t*>(out[2].data), outs);
  PKB_CHECK(cudaGetLastError());
  PKB_CHECK(barrier(ctx, stream));

  int64_t rows = 0;
  for (int d = 0; d < world; ++d) rows += output_splits[d];
  out[0].sizes[0] = rows;
  return 0;
}
