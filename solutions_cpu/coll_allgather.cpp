// coll_allgather on the CPU device: y[p] = rank p's x, on every rank; y is (W, M, N).
//
// Algorithm (the same as the CUDA version): every rank pulls each rank's input straight
// from the shared-memory heap into its own slot of y. Copies are bytes, so any dtype works.
//
// A call is bracketed by two barriers on channel 0 of the signal pads (pkb keeps the last
// channel for itself). After the first, every rank's input is ready; after the second,
// nobody reads my input any more.
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
    ctx->set_error(ctx, "coll_allgather: unknown dtype");
    return 1;
  }
  size_t bytes = nbytes(in[0]);
  char* y = static_cast<char*>(out[0].data);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  for (int p = 0; p < ctx->world; ++p) memcpy(y + p * bytes, ctx->peer_ptr(ctx, in[0].data, p), bytes);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  return 0;
}
