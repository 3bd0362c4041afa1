// A hanging candidate: rank 0 waits for a signal no peer ever sends (sleeping, so the
// wait does not take a core from the other tests).
#include <unistd.h>

#include "pkb/solution.h"

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor*, int, pkb_tensor*, int) {
  volatile uint32_t* pad = ctx->pads[ctx->rank];
  while (ctx->rank == 0 && pad[0] == 0) usleep(1000);
  return 0;
}
