// test_api_uneven on the CPU device: rank r pulls the r + s + 1 rows that rank s sends it
// straight from s's input in the shared-memory heap. Inputs differ in rows by rank; each
// sits at the same heap offset on every rank.
#include <string.h>

#include "pkb/host.hpp"
#include "pkb/solution.h"

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  int r = ctx->rank, w = ctx->world;
  size_t row = size_t(in[0].sizes[1]) * pkb_dtype_size(in[0].dtype);
  char* y = static_cast<char*>(out[0].data);
  pkb::host::barrier(ctx->pads, r, w, 0);
  for (int s = 0; s < w; ++s) {
    size_t start = 0;  // rows s sends to the ranks before me
    for (int d = 0; d < r; ++d) start += size_t(s + d + 1);
    const char* x = static_cast<const char*>(ctx->peer_ptr(ctx, in[0].data, s));
    size_t n = size_t(s + r + 1) * row;
    memcpy(y, x + start * row, n);
    y += n;
  }
  pkb::host::barrier(ctx->pads, r, w, 0);
  return 0;
}
