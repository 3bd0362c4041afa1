// A wrong candidate for any problem whose outputs are not all zero: it writes zeros.
#include <string.h>

#include "pkb/solution.h"

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx*, const pkb_tensor*, int, pkb_tensor* out, int n_out) {
  for (int i = 0; i < n_out; ++i) {
    size_t bytes = pkb_dtype_size(out[i].dtype);
    for (int d = 0; d < out[i].ndim; ++d) bytes *= size_t(out[i].sizes[d]);
    memset(out[i].data, 0, bytes);
  }
  return 0;
}
