// coll_allreduce in ThunderKittens (ParallelKittens style), no NCCL: y = the sum over ranks
// of x, on every rank.
//
// Algorithm (one-shot reduce-scatter + all-gather, as solutions_cuda/coll_allreduce.cu):
// x and y are viewed as parallel global layouts over pkb's symmetric heap (pkb/tk.cuh), so
// gls[p] is rank p's copy. The (M, N) tensor is cut into 16 x 64 tiles; rank r owns every
// W-th tile, starting at tile r. For each of its tiles a warp loads the tile of every rank's
// x into registers (NVLink loads), sums in fp32, rounds once to bf16, and stores the sum
// into that tile of every rank's y (NVLink stores).
//
// A call is barrier, kernel, barrier on ctx->stream (channel 0 of the signal pads): after
// the first every rank's x is ready and every y may be written; after the second nobody
// reads my x or writes my y any more.
#include "kittens.cuh"
#include "pkb/solution.h"
#include "pkb/tk.cuh"

namespace {

using namespace kittens;

constexpr int kChannel = 0;
constexpr int kMaxWorld = 8;  // the pgl's slots (ranks of one NVLink node)
constexpr int kWarps = 4;
constexpr int kRows = 16, kCols = 64;

using tile_bf = rt_bf<kRows, kCols>;
using tile_fl = rt_fl<kRows, kCols>;
using layout = gl<bf16, 1, 1, -1, -1>;
using players = pkb::tk::pgl<layout, kMaxWorld>;

__global__ void __launch_bounds__(kWarps * 32) allreduce_kernel(players x, players y, int rank, int world) {
  const int tile_cols = y.cols() / kCols, tiles = y.rows() / kRows * tile_cols;
  const int warp = blockIdx.x * kWarps + threadIdx.x / 32, warps = gridDim.x * kWarps;
  tile_bf in;
  tile_fl part, acc;
  for (int t = rank + warp * world; t < tiles; t += warps * world) {
    coord<tile_bf> at{0, 0, t / tile_cols, t % tile_cols};
    warp::zero(acc);
    for (int p = 0; p < world; ++p) {
      warp::load(in, x.gls[p], at);
      warp::copy(part, in);
      warp::add(acc, acc, part);
    }
    warp::copy(in, acc);
    for (int p = 0; p < world; ++p) warp::store(y.gls[p], in, at);
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  const int64_t m = out[0].sizes[0], n = out[0].sizes[1];
  if (out[0].dtype != PKB_BF16 || ctx->world > kMaxWorld || m % kRows || n % kCols) {
    ctx->set_error(ctx, "coll_allreduce (ThunderKittens): needs bf16, at most 8 ranks, M % 16 == 0, N % 64 == 0");
    return 1;
  }
  auto x = pkb::tk::make_pgl<players>(ctx, in[0].data, 1, 1, int(m), int(n));
  auto y = pkb::tk::make_pgl<players>(ctx, out[0].data, 1, 1, int(m), int(n));
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  const int tiles = int(m / kRows * (n / kCols));
  const int mine = (tiles + ctx->world - 1) / ctx->world;
  int blocks = pkb::dev::blocks_for(ctx, (mine + kWarps - 1) / kWarps, 1, 1, 8);
  pkb::tk::barrier(ctx, stream, kChannel);
  allreduce_kernel<<<blocks, kWarps * 32, 0, stream>>>(x, y, ctx->rank, ctx->world);
  pkb::tk::barrier(ctx, stream, kChannel);
  return pkb::dev::launch_status(ctx);
}
