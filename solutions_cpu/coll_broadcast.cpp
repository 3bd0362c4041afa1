// coll_broadcast on the CPU device: y = the root's x, on every rank.
//
// Algorithm (the same as the CUDA version, where it spares the root's links): the tensor
// is cut into W contiguous slices and rank r relays slice r, reading it once from the
// root's input and writing it into every rank's output. Copies are bytes, so any dtype
// works.
//
// A call is bracketed by two barriers on channel 0 of the signal pads (pkb keeps the last
// channel for itself). After the first, the root's input is ready and every output may be
// written; after the second, nobody reads my input or writes my output any more.
#include <string.h>

#include <algorithm>

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
    ctx->set_error(ctx, "coll_broadcast: unknown dtype");
    return 1;
  }
  int rank = ctx->rank, world = ctx->world;
  int root = int(ctx->arg_int(ctx, "root", nullptr));
  size_t bytes = nbytes(out[0]);
  size_t slice = (bytes + world - 1) / world;
  size_t begin = std::min(bytes, rank * slice), end = std::min(bytes, begin + slice);
  const char* x_root = static_cast<const char*>(ctx->peer_ptr(ctx, in[0].data, root));
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  for (int p = 0; p < world; ++p) {
    char* y = static_cast<char*>(ctx->peer_ptr(ctx, out[0].data, p));
    memcpy(y + begin, x_root + begin, end - begin);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  return 0;
}
