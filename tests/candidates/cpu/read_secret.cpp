// BAD CANDIDATE for coll_allreduce (CPU device), a pkb sandbox test.
// Expected verdict: correct
//
// What it tries: to read API keys from its environment (the shell that runs pkb often
// holds them). Ranks start from an allow-list of variables, so it sees none, and its
// outputs are right. Were a key visible, it would write a wrong output on purpose, so a
// leak shows as verdict "wrong" (as it does under --no-sandbox, which tests check).
#include <stdint.h>
#include <stdlib.h>

#include <initializer_list>

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

bool sees_a_secret() {
  for (const char* v : {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY",
                        "PKB_TEST_SECRET_TOKEN"})
    if (getenv(v)) return true;
  return false;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  allreduce(ctx, in[0].data, out[0].data, n);
  if (sees_a_secret()) static_cast<uint16_t*>(out[0].data)[0] ^= 0x4000;  // the leak, made visible
  return 0;
}
