// An empty CUDA candidate for tests/candidates/problems/test_empty.toml: the baseline that
// bench/overhead/empty.py is timed against.
#include "pkb/solution.h"

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx*, const pkb_tensor*, int, pkb_tensor*, int) { return 0; }
