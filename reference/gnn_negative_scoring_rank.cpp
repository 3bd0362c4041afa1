// Link-prediction ranking: every rank's positive and negative scores are replicated on
// every rank (an all-gather, as the original's all_to_all of repeated data), and the
// rank of each positive among its candidates is 1 + #(negatives scoring higher).
// Origin: ParallelKernelBench 69_gnn_negative_scoring.
// Deviations: compared on the scores (sigmoid is increasing); among equal scores the
// reference puts the positive first and check() accepts any place (the original's
// unstable sort left it open); positives scored randn + 2.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct NegativeScoringRank : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    // Rank s holds P0 + s % 3 positives (the spec's shapes), so no sizes need exchanging:
    // rows are padded to P0 + 2, all-gathered and trimmed.
    auto& comm = ctx.comm();
    int64_t w = ctx.world(), p0 = ctx.size("P0"), nn = ctx.size("NN"), most = p0 + 2;
    at::Tensor mine = at::zeros({most, nn + 1}, in["neg"].options());
    mine.narrow(0, 0, in["pos"].size(0)).select(1, 0).copy_(in["pos"]);
    mine.narrow(0, 0, in["pos"].size(0)).narrow(1, 1, nn).copy_(in["neg"]);
    at::Tensor all = comm.all_gather(mine).view({w, most, nn + 1});
    std::vector<at::Tensor> rows;
    for (int64_t s = 0; s < w; ++s) rows.push_back(all[s].narrow(0, 0, p0 + s % 3));
    at::Tensor scores = at::cat(rows);
    at::Tensor pos = scores.narrow(1, 0, 1), neg = scores.narrow(1, 1, nn);
    at::sum_out(out["ranks"], neg > pos, 1).add_(1);  // a bool sum counts in int64
  }

  // ranks under ties: the positive may stand anywhere among the negatives scored equal to
  // it, so any rank from 1 + #(neg > pos) to 1 + #(neg >= pos) is valid (scores compared
  // in dt, exactly).
  at::Tensor check(const pkb::Ctx& ctx, size_t, const pkb::CallInputs& inputs, const std::vector<at::Tensor>& got,
                   const std::vector<at::Tensor>&) const override {
    std::vector<at::Tensor> lowest, highest;
    for (int s = 0; s < ctx.world(); ++s) {
      const pkb::Inputs& in = inputs.of(s);
      at::Tensor pos = in["pos"].unsqueeze(1), neg = in["neg"];
      lowest.push_back((neg > pos).sum(1).add_(1));
      highest.push_back((neg >= pos).sum(1).add_(1));
    }
    at::Tensor lo = at::cat(lowest).to(at::kLong), hi = at::cat(highest).to(at::kLong);
    return (got[0] < lo).logical_or_(got[0] > hi);
  }
};

}  // namespace

PKB_REFERENCE("gnn_negative_scoring_rank", NegativeScoringRank);
