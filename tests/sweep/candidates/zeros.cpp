// A wrong candidate for any problem whose outputs are not all zero: it writes zeros.
#include <string.h>

#include "pkb/solution.h"

namespace {

size_t element_bytes(int dtype) {
  switch (dtype) {
    case PKB_FP64: case PKB_INT64: case PKB_COMPLEX64: return 8;
    case PKB_COMPLEX128: return 16;
    case PKB_FP32: case PKB_INT32: return 4;
    case PKB_BF16: case PKB_FP16: case PKB_INT16: return 2;
    default: return 1;
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx*, const pkb_tensor*, int, pkb_tensor* out, int n_out) {
  for (int i = 0; i < n_out; ++i) {
    size_t bytes = element_bytes(out[i].dtype);
    for (int d = 0; d < out[i].ndim; ++d) bytes *= size_t(out[i].sizes[d]);
    memset(out[i].data, 0, bytes);
  }
  return 0;
}
