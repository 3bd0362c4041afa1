"""cp_hyena_conv1d_halo on the CPU device in Python: a causal depthwise conv1d over a
zig-zag context-parallel sequence, with a halo exchange.

The sequence is 2W chunks of L; rank r holds chunks r and 2W-1-r side by side in x
(B, C, 2L). A causal kernel of K taps needs the K-1 positions before each chunk:

- before chunk r: the tail of chunk r-1, the first half of rank r-1's x (zeros on rank 0);
- before chunk 2W-1-r: the tail of chunk 2W-2-r, the second half of rank r+1's x (on rank
  W-1 that chunk is W-1, the rank's own first half: the middle of the zig-zag).

Halo exchange by pulling: after a barrier (every x is ready) each rank copies the two
tails it needs straight out of its neighbours' x through the shared-memory heap, then a
second barrier says nobody reads anyone's x any more. Both chunks, each behind its halo,
go through one grouped conv1d in fp32 (as the reference), rounded once into y.
"""
import torch
import torch.nn.functional as F


def pkb_run(ctx, inputs, outputs):
    x, weight, y = inputs.x, inputs.weight, outputs.y
    r, w = ctx.rank, ctx.world
    b, c, two_l = x.shape
    l, pad = two_l // 2, weight.shape[2] - 1
    chunks = x.view(b, c, 2, l)  # [:, :, 0] = chunk r, [:, :, 1] = chunk 2W-1-r

    ctx.barrier()  # every rank's x is ready
    # The K-1 positions before my first chunk: the end of rank r-1's first chunk.
    if r > 0:
        halo_a = ctx.peer(x, r - 1).view(b, c, 2, l)[:, :, 0, l - pad:]
    else:
        halo_a = torch.zeros(b, c, pad, dtype=x.dtype)
    # Before my second chunk: the end of rank r+1's second chunk (my own first on rank W-1).
    if r < w - 1:
        halo_b = ctx.peer(x, r + 1).view(b, c, 2, l)[:, :, 1, l - pad:]
    else:
        halo_b = chunks[:, :, 0, l - pad:]
    # Each chunk behind its halo, as a batch of 2B sequences (chunk a rows, then chunk b);
    # torch.cat copies the halos out of the peers' memory.
    halos = torch.cat([halo_a, halo_b])                       # (2B, C, K-1)
    body = chunks.permute(2, 0, 1, 3).reshape(2 * b, c, l)    # (2B, C, L)
    padded = torch.cat([halos, body], dim=-1).float()         # (2B, C, K-1+L) fp32
    ctx.barrier()  # the halos are copied: the neighbours may go on (and overwrite their x)

    # Depthwise (groups = C), no padding: output t sees padded[t .. t+K-1], i.e. the
    # positions t-K+1 .. t of the chunk, halo included.
    conv = F.conv1d(padded, weight.float(), groups=c)          # (2B, C, L) fp32
    # Back to (B, C, 2, L) and rounded once to y's dtype, written into pkb's buffer.
    y.view(b, c, 2, l).copy_(conv.view(2, b, c, l).permute(1, 2, 0, 3))
