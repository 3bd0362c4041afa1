// BAD CANDIDATE for coll_allreduce (CPU device), a pkb test.
// Expected verdict: wrong
//
// What is wrong: it aims at the copies pkb takes of each call's outputs. When those copies
// (the capture slots) sat in the candidate rank's own memory right after the set (inputs,
// outputs, then capture after capture), a candidate could write a call's answer there after
// the call, where pkb would read it as the call's. This one is honest for its first twelve
// calls (the trials and the start of the warm-up); after that a call returns at once and a
// thread of its own writes the answer into where capture k was, leaving the outputs as pkb
// poisoned them. pkb's judge now copies the outputs into its own process as the call
// returns: the copies hold the poison, and the writes land in the candidate's own heap.
#include <stdint.h>

#include <thread>

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

int calls = 0;

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  if (++calls <= 12) {
    allreduce(ctx, in[0].data, out[0].data, n);
    return 0;
  }
  // Capture k was after the set: the output's slot (rounded to 256 bytes), then k more.
  size_t slot = (n * 2 + 255) / 256 * 256;
  char* capture = static_cast<char*>(out[0].data) + slot * (1 + (calls - 13) % 2);
  const void* x = in[0].data;
  std::thread([ctx, x, capture, n] { allreduce(ctx, x, capture, n); }).join();
  return 0;
}
