"""gnn_feature_exchange_all2all on the CPU device in Python: GraphBolt's cooperative feature
exchange, an uneven all-to-all of gathered rows, done as remote gathers.

Rank s owns features (S3, H). seed_inverse_ids (pW,) lists, in rotated groups, the rows of
its features each peer asked for: group c (rows for rank (s + c) mod W) holds
counts[(s + c) % W][s] ids. counts (W, W), on the host and equal everywhere, has
counts[i][j] = rows rank j sends to rank i. Rank r returns the rows it receives, also in
rotated groups: group c comes from rank (r + c) mod W.

The reference gathers features[seed_inverse_ids] into a send buffer and runs an
all-to-all. With every rank's memory in reach there is no send buffer: rank r finds, in
each source s's seed_inverse_ids, the group meant for it (its offset is the sum of the
counts of the groups before it) and gathers those rows of s's features straight into its
output, through the shared-memory heap. Two barriers: every input is ready; nobody reads
my inputs any more.
"""
import torch


def pkb_run(ctx, inputs, outputs):
    features, ids, received = inputs.features, inputs.seed_inverse_ids, outputs.received
    r, w = ctx.rank, ctx.world
    counts = inputs.counts.tolist()  # counts[i][j]: rows j sends to i

    ctx.barrier()  # every rank's features and ids are ready
    at = 0  # where group c starts in my output
    for c in range(w):
        s = (r + c) % w  # my group c comes from rank s
        # In s's send order my rows are group (r - s) mod W; the groups before it go to
        # ranks s, s+1, ... and hold counts[dest][s] rows each.
        start = sum(counts[(s + k) % w][s] for k in range(((r - s) % w)))
        n = counts[r][s]
        rows = ctx.peer(ids, s)[start:start + n]
        torch.index_select(ctx.peer(features, s), 0, rows, out=received[at:at + n])
        at += n
    ctx.barrier()  # all gathered: the peers may go on
