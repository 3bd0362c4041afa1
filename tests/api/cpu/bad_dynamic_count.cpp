// test_api_dynamic done right except that it never reports the count: the outputs keep
// their capacity, so the poisoned tail is returned as data. Verdict: wrong.
#include "pkb/host.hpp"
#include "pkb/solution.h"

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  int64_t m = in[0].sizes[0], n = 0;
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
  return 0;
}
