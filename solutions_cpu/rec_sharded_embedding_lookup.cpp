// rec_sharded_embedding_lookup on the CPU device: rank r holds rows [r*M, (r+1)*M) of a
// W*M-row table and L indices into the whole table; it returns their rows in index order.
//
// Algorithm (the same as the CUDA version): no all-to-all of indices and rows. Every rank's
// table lives in the shared-memory heap, so each lookup is served straight from its
// owner's table through the owner's peer pointer (owner = idx / M), row by row into the
// output. Rows are copied as bytes, so any dtype works.
//
// A call is bracketed by two barriers on channel 0 of the signal pads (pkb keeps the last
// channel for itself). After the first, every rank's table is ready; after the second,
// nobody reads my table any more.
#include <string.h>

#include <algorithm>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {
constexpr int kChannel = 0;
}

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  const pkb_tensor &idx = in[0], &table = in[1];
  size_t es = pkb_dtype_size(table.dtype);
  if (!es || idx.dtype != PKB_INT64) {
    ctx->set_error(ctx, "rec_sharded_embedding_lookup: unknown dtype, or indices not int64");
    return 1;
  }
  int64_t lookups = idx.sizes[0], rows = table.sizes[0];
  size_t row_bytes = size_t(table.sizes[1]) * es;
  const int64_t* ids = static_cast<const int64_t*>(idx.data);
  char* y = static_cast<char*>(out[0].data);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  for (int64_t i = 0; i < lookups; ++i) {
    int64_t owner = std::clamp<int64_t>(ids[i] / rows, 0, ctx->world - 1);
    const char* base = static_cast<const char*>(ctx->peer_ptr(ctx, table.data, int(owner)));
    memcpy(y + i * row_bytes, base + (ids[i] - owner * rows) * row_bytes, row_bytes);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  return 0;
}
