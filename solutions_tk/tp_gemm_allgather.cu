// tp_gemm_allgather in ThunderKittens (ParallelKittens style), no NCCL: rank r computes
// C_r = a @ b = A_r @ B_r (M, Nl), and every rank returns c = cat(C_0, ..., C_{W-1}) along
// dim 1 (M, N).
//
// Algorithm: the GEMM and the all-gather are one kernel. Each warp computes a 32 x 32 tile
// of C_r with tensor-core MMAs on ThunderKittens register tiles (bf16 in, fp32 accumulate,
// rounded once as in the reference), then stores that tile straight into column block r of
// every rank's c through a parallel global layout over pkb's symmetric heap (NVLink stores),
// so the gather overlaps the remaining tiles' math. Each rank receives the W-1 other
// blocks, the all-gather minimum.
//
// A call is barrier, kernel, barrier on ctx->stream (channel 0 of the signal pads): after
// the first every rank's c may be written (pkb poisons it before the call); after the
// second every block has landed everywhere.
#include "kittens.cuh"
#include "pkb/solution.h"
#include "pkb/tk.cuh"

namespace {

using namespace kittens;

constexpr int kChannel = 0;
constexpr int kMaxWorld = 8;
constexpr int kWarps = 4;
constexpr int kTM = 32, kTN = 32, kTK = 16;

using a_tile = rt_bf<kTM, kTK>;
using b_tile = rt_bf<kTK, kTN, ducks::rt_layout::col>;
using acc_tile = rt_fl<kTM, kTN>;
using c_tile = rt_bf<kTM, kTN>;
using layout = gl<bf16, 1, 1, -1, -1>;
using players = pkb::tk::pgl<layout, kMaxWorld>;

__global__ void __launch_bounds__(kWarps * 32)
    gemm_allgather_kernel(layout a, layout b, players c, int rank, int world, int block_col) {
  const int k_tiles = a.cols() / kTK, n_tiles = b.cols() / kTN, tiles = a.rows() / kTM * n_tiles;
  const int warp = blockIdx.x * kWarps + threadIdx.x / 32, warps = gridDim.x * kWarps;
  a_tile at;
  b_tile bt;
  acc_tile acc;
  c_tile out;
  for (int t = warp; t < tiles; t += warps) {
    const int tm = t / n_tiles, tn = t % n_tiles;
    warp::zero(acc);
    for (int k = 0; k < k_tiles; ++k) {
      warp::load(at, a, coord<a_tile>{0, 0, tm, k});
      warp::load(bt, b, coord<b_tile>{0, 0, k, tn});
      warp::mma_AB(acc, at, bt, acc);
    }
    warp::copy(out, acc);
    for (int j = 0; j < world; ++j) {  // rank+1 first: at any time ranks write to different peers
      int p = (rank + 1 + j) % world;
      warp::store(c.gls[p], out, coord<c_tile>{0, 0, tm, block_col + tn});
    }
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  const int64_t m = in[0].sizes[0], k = in[0].sizes[1], nl = in[1].sizes[1], n = out[0].sizes[1];
  if (in[0].dtype != PKB_BF16 || ctx->world > kMaxWorld || m % kTM || nl % kTN || k % kTK) {
    ctx->set_error(ctx, "tp_gemm_allgather (ThunderKittens): needs bf16, at most 8 ranks, M % 32 == 0, "
                        "Nl % 32 == 0, K % 16 == 0");
    return 1;
  }
  layout a(static_cast<bf16*>(in[0].data), nullptr, nullptr, size_t(m), size_t(k));
  layout b(static_cast<bf16*>(in[1].data), nullptr, nullptr, size_t(k), size_t(nl));
  auto c = pkb::tk::make_pgl<players>(ctx, out[0].data, 1, 1, int(m), int(n));
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  const int tiles = int(m / kTM * (nl / kTN));
  int blocks = pkb::dev::blocks_for(ctx, (tiles + kWarps - 1) / kWarps, 1, 1, 8);
  pkb::tk::barrier(ctx, stream, kChannel);
  gemm_allgather_kernel<<<blocks, kWarps * 32, 0, stream>>>(a, b, c, ctx->rank, ctx->world, int(ctx->rank * nl / kTN));
  pkb::tk::barrier(ctx, stream, kChannel);
  return pkb::dev::launch_status(ctx);
}
