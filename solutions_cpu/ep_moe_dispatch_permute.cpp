// ep_moe_dispatch_permute on the CPU device, DeepEP-style: every token copy is written
// straight into its destination rank's expert-ordered output buffer through the
// shared-memory heap; there is no separate permute, all-to-all or regroup step.
//
// Algorithm (the same as solutions_cuda/ep_moe_dispatch_permute.cu, whose indexing this
// tests): (1) from expert_mask, the routing map (E, M), each (expert, token) pair's
// position among the expert's tokens, and the count per expert; (2) the counts go into row
// `rank` of every peer's count table (W, E) in the symmetric heap, then a barrier; (3) from
// the full table, prefix sums give where this rank's rows for expert e start in the owner's
// buffer: after the owner's earlier local experts (all sources) and, within expert e, after
// the lower source ranks; (4) each routed pair's hidden row is copied to that place in the
// owner's output, and its token id into the own permutation mapping (expert-major); (5) a
// barrier, after which every rank's output holds all its rows.
//
// The first barrier also guarantees every peer is inside the call (its output poisoned
// and free to be written); a peer refills my count table only after the closing barrier,
// when I no longer read it. The received row count comes from the host input
// output_splits (also sum of the table's column block for my experts).
#include <string.h>

#include <vector>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;

struct State {
  int64_t* table = nullptr;  // (W, E) in the symmetric heap: row s = rank s's counts
};

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int, const pkb_tensor*, int) {
  int64_t e = in[1].sizes[0];
  auto* st = new State;
  st->table = static_cast<int64_t*>(ctx->symm_alloc(ctx, size_t(ctx->world) * e * sizeof(int64_t)));
  ctx->user = st;
  if (!st->table) {
    ctx->set_error(ctx, "ep_moe_dispatch_permute: symmetric heap full");
    return 1;
  }
  return 0;
}

PKB_EXPORT void pkb_finalize(pkb_ctx* ctx) { delete static_cast<State*>(ctx->user); }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  auto* st = static_cast<State*>(ctx->user);
  const int w = ctx->world, rank = ctx->rank;
  const int64_t m = in[0].sizes[0], n = in[0].sizes[1];
  const int64_t e = in[1].sizes[0], k = in[1].sizes[1], le = e / w;
  const size_t row = size_t(n) * pkb_dtype_size(in[0].dtype);
  const char* hidden = static_cast<const char*>(in[0].data);
  const float* mask = static_cast<const float*>(in[1].data);
  const int64_t* output_splits = static_cast<const int64_t*>(in[3].data);
  float* routing_map = static_cast<float*>(out[1].data);
  int64_t* mapping = static_cast<int64_t*>(out[2].data);

  // (1) Routing map, positions within each expert, counts.
  std::vector<int64_t> pos(size_t(e * m), -1), count(size_t(e), 0);
  for (int64_t x = 0; x < e; ++x)
    for (int64_t t = 0; t < m; ++t) {
      float r = 0;
      for (int64_t j = 0; j < k; ++j) r += mask[(x * k + j) * m + t];
      routing_map[x * m + t] = r;
      if (r > 0) pos[x * m + t] = count[x]++;
    }

  // (2) Counts into row `rank` of every peer's table.
  for (int d = 0; d < w; ++d) {
    int64_t* table = static_cast<int64_t*>(ctx->peer_ptr(ctx, st->table, d));
    memcpy(table + int64_t(rank) * e, count.data(), size_t(e) * sizeof(int64_t));
  }
  pkb::host::barrier(ctx->pads, rank, w, kChannel);

  // (3) Offsets: own expert-major order, and each expert's first row in its owner's buffer.
  const int64_t* table = st->table;
  std::vector<int64_t> own(size_t(e), 0), dest(size_t(e), 0);
  for (int64_t x = 1; x < e; ++x) own[x] = own[x - 1] + count[x - 1];
  for (int64_t x = 0; x < e; ++x) {
    int64_t d = x / le, off = 0;
    for (int64_t y = d * le; y < x; ++y)
      for (int s = 0; s < w; ++s) off += table[s * e + y];
    for (int s = 0; s < rank; ++s) off += table[s * e + x];
    dest[x] = off;
  }

  // (4) Rows straight into the owners' buffers; token ids into the mapping.
  for (int64_t x = 0; x < e; ++x) {
    char* peer_out = static_cast<char*>(ctx->peer_ptr(ctx, out[0].data, int(x / le)));
    for (int64_t t = 0; t < m; ++t) {
      int64_t p = pos[x * m + t];
      if (p < 0) continue;
      mapping[own[x] + p] = t;
      memcpy(peer_out + size_t(dest[x] + p) * row, hidden + size_t(t) * row, row);
    }
  }

  // (5) Every row has landed everywhere.
  pkb::host::barrier(ctx->pads, rank, w, kChannel);
  int64_t rows = 0;
  for (int s = 0; s < w; ++s) rows += output_splits[s];
  out[0].sizes[0] = rows;
  return 0;
}
