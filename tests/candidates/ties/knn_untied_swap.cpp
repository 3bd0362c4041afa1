// dp_dinov2_knn on the CPU device, wrong where no tie excuses it: knn_ties_reversed.cpp
// (ties broken by the larger global index, which pkb accepts), except that in each query's
// list the first two neighbours of DIFFERENT similarity (and different labels) have their
// labels swapped: the label at that place is not the label of any item of the similarity
// it stands for. The similarities output stays right.
// Expected verdict: wrong
//
// Every rank reads every rank's train shard through the shared-memory heap: its queries
// against all W*T train items, the top k by (similarity desc, global index desc).
#include <algorithm>
#include <numeric>
#include <vector>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {
constexpr int kChannel = 0;
}

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  const pkb_tensor &test = in[0], &train = in[1], &labels = in[2];
  if (test.dtype != PKB_BF16 || train.dtype != PKB_BF16 || labels.dtype != PKB_INT64) {
    ctx->set_error(ctx, "knn_untied_swap: bf16 features and int64 labels only");
    return 1;
  }
  int64_t nq = test.sizes[0], nf = test.sizes[1], nt = train.sizes[1], k = out[0].sizes[1];
  int64_t items = ctx->world * nt;
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  std::vector<float> feats(nf * items);  // (F, W T): global index s T + c
  std::vector<int64_t> label(items);
  for (int s = 0; s < ctx->world; ++s) {
    auto* x = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, train.data, s));
    auto* l = static_cast<const int64_t*>(ctx->peer_ptr(ctx, labels.data, s));
    for (int64_t f = 0; f < nf; ++f)
      for (int64_t c = 0; c < nt; ++c) feats[f * items + s * nt + c] = pkb::host::bf16_to_float(x[f * nt + c]);
    std::copy(l, l + nt, label.begin() + s * nt);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, kChannel);
  auto* queries = static_cast<const uint16_t*>(test.data);
  auto* sims_out = static_cast<uint16_t*>(out[0].data);
  auto* labels_out = static_cast<int64_t*>(out[1].data);
  std::vector<float> sim(items);
  std::vector<int64_t> order(items);
  for (int64_t q = 0; q < nq; ++q) {
    std::fill(sim.begin(), sim.end(), 0.0f);
    for (int64_t f = 0; f < nf; ++f) {
      float a = pkb::host::bf16_to_float(queries[q * nf + f]);
      const float* row = &feats[f * items];
      for (int64_t g = 0; g < items; ++g) sim[g] += a * row[g];  // exact: grid values
    }
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
      return sim[a] != sim[b] ? sim[a] > sim[b] : a > b;
    });
    for (int64_t j = 0; j < k; ++j) {
      sims_out[q * k + j] = pkb::host::float_to_bf16(sim[order[j]]);
      labels_out[q * k + j] = label[order[j]];
    }
    for (int64_t j = 0; j + 1 < k; ++j) {
      if (sim[order[j]] == sim[order[j + 1]] || label[order[j]] == label[order[j + 1]]) continue;
      std::swap(labels_out[q * k + j], labels_out[q * k + j + 1]);
      break;
    }
  }
  return 0;
}
