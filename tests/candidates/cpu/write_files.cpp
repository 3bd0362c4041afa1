// BAD CANDIDATE for coll_allreduce (CPU device), a pkb sandbox test.
// Expected verdict: correct
//
// What it tries: to write a file into the user's real home folder (from the password
// database: HOME points at pkb's scratch folder) and into the folder of the results
// (PKB_TEST_RESULTS_DIR, which the test sets). Landlock lets a rank write only its scratch
// folder and pkb's own outputs, so both writes fail and nothing appears; its outputs are
// right. A write that succeeded would make an output wrong on purpose.
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

void allreduce(pkb_ctx* ctx, const void* x, void* y, size_t n) {
  const uint16_t* xs[64];
  for (int p = 0; p < ctx->world; ++p) xs[p] = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, x, p));
  uint16_t* out = static_cast<uint16_t*>(y);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int p = 0; p < ctx->world; ++p) acc += pkb::host::bf16_to_float(xs[p][i]);
    out[i] = pkb::host::float_to_bf16(acc);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
}

bool wrote(const std::string& path) {
  FILE* f = fopen(path.c_str(), "w");
  if (!f) return false;
  fputs("written by a candidate\n", f);
  fclose(f);
  return true;
}

bool escaped() {
  bool any = false;
  if (passwd* pw = getpwuid(getuid())) any |= wrote(std::string(pw->pw_dir) + "/pkb-sandbox-probe.txt");
  if (const char* dir = getenv("PKB_TEST_RESULTS_DIR")) any |= wrote(std::string(dir) + "/pkb-sandbox-probe.txt");
  return any;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  static bool escaped_once = escaped();
  allreduce(ctx, in[0].data, out[0].data, n);
  if (escaped_once) static_cast<uint16_t*>(out[0].data)[0] ^= 0x4000;
  return 0;
}
