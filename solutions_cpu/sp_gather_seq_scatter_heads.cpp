// sp_gather_seq_scatter_heads on the CPU device: the CPU twin of
// solutions_cuda/sp_gather_seq_scatter_heads.cu (same algorithm, same indexing).
//
// x is rank r's (B, S, H, D) sequence shard; rank p's output y_p is (B, W*S, H/W, D) with
// y_p[b, r*S + s] = x_r[b, s, head group p]. The all-to-all and its layout change are one
// pass: rank r writes each (b, s) row of head group p (Hl*D contiguous elements of x) straight
// into peer p's output, at row r*S + s of batch b (Hl*D contiguous elements there too), for
// every peer (itself included), starting with rank r+1 so that the ranks spread their writes.
// Each rank writes the W-1 shares it sends (plus its own), the all-to-all minimum.
//
// A call is barrier, writes, barrier on channel 0 of the signal pads: after the first every
// peer's y is ready to be written (pkb fills it with NaN before the call); after the second
// every share has landed in every y, and nobody writes my y any more. Bytes are copied, so
// any dtype works.
#include <stdint.h>
#include <string.h>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  const pkb_tensor& x = in[0];
  const int rank = ctx->rank, world = ctx->world;
  const int64_t b = x.sizes[0], s = x.sizes[1], h = x.sizes[2], d = x.sizes[3];
  const size_t es = pkb_dtype_size(x.dtype);
  if (x.ndim != 4 || !es || h % world) {
    ctx->set_error(ctx, "sp_gather_seq_scatter_heads: x must be (B, S, H, D) with H % W == 0");
    return 1;
  }
  const int64_t hl = h / world;
  const size_t row = size_t(hl * d) * es;  // one (b, s) row of one head group
  const char* src = static_cast<const char*>(x.data);

  pkb::host::barrier(ctx->pads, rank, world, kChannel);
  for (int j = 1; j <= world; ++j) {
    const int p = (rank + j) % world;
    char* dst = static_cast<char*>(ctx->peer_ptr(ctx, out[0].data, p));
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t si = 0; si < s; ++si)
        memcpy(dst + size_t((bi * world + rank) * s + si) * row, src + size_t((bi * s + si) * h + p * hl) * d * es, row);
  }
  pkb::host::barrier(ctx->pads, rank, world, kChannel);
  return 0;
}
