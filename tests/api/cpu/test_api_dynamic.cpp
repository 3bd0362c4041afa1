// test_api_dynamic on the CPU device: scans every rank's x in the heap and writes the
// positive entries and their global indices; pkb reads the count from sizes[0]. Every call,
// warm-up and timed ones included, must find sizes[0] at the capacity (solution.h).
#include "pkb/host.hpp"
#include "pkb/solution.h"

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  int64_t m = in[0].sizes[0], n = 0;
  if (out[0].sizes[0] != ctx->world * m || out[1].sizes[0] != ctx->world * m) {
    ctx->set_error(ctx, "a data-dependent dim did not start at its capacity");
    return 1;
  }
  float* positive = static_cast<float*>(out[0].data);
  int64_t* index = static_cast<int64_t*>(out[1].data);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (int s = 0; s < ctx->world; ++s) {
    const float* x = static_cast<const float*>(ctx->peer_ptr(ctx, in[0].data, s));
    for (int64_t i = 0; i < m; ++i)
      if (x[i] > 0) {
        positive[n] = x[i];
        index[n++] = s * m + i;
      }
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  out[0].sizes[0] = out[1].sizes[0] = n;
  return 0;
}
