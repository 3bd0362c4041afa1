// gnn_negative_scoring_rank on the CPU device, right, with ties broken the other way: the
// positive is placed after every negative scored equal to it, rank = 1 + #(neg >= pos)
// (the reference counts only neg > pos). bf16 scores tie often (~0.4 equal negatives per
// positive), so most trials differ from the reference; pkb must accept any place among
// the equal scores (the spec's ties).
// Expected verdict: correct
//
// Every rank reads every rank's scores through the shared-memory heap and ranks them all.
#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {
constexpr int kChannel = 0;
}

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  const pkb_tensor &pos = in[0], &neg = in[1];
  if (pos.dtype != PKB_BF16 || neg.dtype != PKB_BF16) {
    ctx->set_error(ctx, "negative_rank_ties_last: bf16 scores only");
    return 1;
  }
  int64_t p0 = ctx->arg_int(ctx, "P0", nullptr), nn = ctx->arg_int(ctx, "NN", nullptr);
  auto* ranks = static_cast<int64_t*>(out[0].data);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  int64_t at = 0;
  for (int s = 0; s < ctx->world; ++s) {
    auto* ps = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, pos.data, s));
    auto* ns = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, neg.data, s));
    for (int64_t i = 0; i < p0 + s % 3; ++i) {
      float p = pkb::host::bf16_to_float(ps[i]);
      int64_t r = 1;
      for (int64_t j = 0; j < nn; ++j) r += pkb::host::bf16_to_float(ns[i * nn + j]) >= p;
      ranks[at++] = r;
    }
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  return 0;
}
