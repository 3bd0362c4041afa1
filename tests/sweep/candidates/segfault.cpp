// A crashing candidate: rank 1 dies of SIGSEGV in its first call.
#include <signal.h>

#include "pkb/solution.h"

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor*, int, pkb_tensor*, int) {
  if (ctx->rank == 1) raise(SIGSEGV);
  return 0;
}
