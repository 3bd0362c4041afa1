// coll_scatter on the CPU device: the root's x is (W, M, N); rank r's y = the root's x[r].
//
// Algorithm (the same as the CUDA version): the root pushes slice p of its input into rank
// p's output through the shared-memory heap; the other ranks only take part in the
// barriers. Only y, which has the same shape on every rank, is addressed on a peer: x is
// empty off the root. Copies are bytes, so any dtype works.
//
// A call is bracketed by two barriers on channel 0 of the signal pads (pkb keeps the last
// channel for itself). After the first, every output may be written; after the second,
// nobody writes my output any more.
#include <string.h>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;

size_t nbytes(const pkb_tensor& t) {
  size_t n = pkb_dtype_size(t.dtype);
  for (int d = 0; d < t.ndim; ++d) n *= size_t(t.sizes[d]);
  return n;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (!pkb_dtype_size(out[0].dtype)) {
    ctx->set_error(ctx, "coll_scatter: unknown dtype");
    return 1;
  }
  int root = int(ctx->arg_int(ctx, "root", nullptr));
  size_t bytes = nbytes(out[0]);  // one (M, N) slice
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  if (ctx->rank == root) {
    const char* x = static_cast<const char*>(in[0].data);
    for (int p = 0; p < ctx->world; ++p) memcpy(ctx->peer_ptr(ctx, out[0].data, p), x + p * bytes, bytes);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  return 0;
}
