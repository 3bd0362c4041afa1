"""misc_sample_sort on the CPU device in Python: a distributed sample sort with exact
rebalancing, its exchanges done as one-sided reads.

Rank r holds count_r keys (the first count_r of values). The ranks together return all
keys sorted and split evenly: rank r gets sorted elements [r*base + min(r, extra), ...)
of length base + (r < extra), with base, extra = divmod(total, W). The output's length
depends on the data: outputs.set_size() reports it.

Keys are ordered by (value, rank, position in the rank's sorted keys): a total order, so
buckets split cleanly even where many keys are equal.

1. Each rank sorts its keys into a symmetric buffer and publishes its count. Barrier.
2. Splitters: every rank reads W regularly spaced samples of every peer's sorted keys
   (the same reads everywhere, so every rank picks the same W-1 splitters) and takes
   the (value, rank, position) triples at regular places of their sorted list.
3. Buckets: bucket d holds the keys between splitters d-1 and d. Rank d finds, by binary
   search in each peer's sorted keys, the range that falls in its bucket and pulls it
   (the all-to-all of the reference, without send buffers), then sorts what it got into
   a second symmetric buffer and publishes its size. Barrier.
4. Rebalance: the buckets in rank order are the whole sorted sequence; rank r pulls the
   pieces of its output range out of the buckets that overlap it. Barrier: nobody reads
   my buffers any more.
"""
import torch


def pkb_init(ctx, inputs, outputs):
    n, w = inputs.values.shape[0], ctx.world
    dt = inputs.values.dtype
    ctx.user = {
        "keys": ctx.symm_alloc((n,), dt),          # my keys, sorted
        "bucket": ctx.symm_alloc((w * n,), dt),    # my bucket, sorted (at most every key)
        "sizes": ctx.symm_alloc((2,), torch.int64),  # [my key count, my bucket's size]
    }


def pkb_run(ctx, inputs, outputs):
    r, w = ctx.rank, ctx.world
    keys, bucket, sizes = ctx.user["keys"], ctx.user["bucket"], ctx.user["sizes"]

    # 1. Sort locally and publish.
    count = int(inputs.count)
    keys[:count].copy_(inputs.values[:count].sort().values)
    sizes[0] = count
    ctx.barrier()  # every rank's sorted keys and count are published

    peer_keys, counts = [], []
    for s in range(w):
        n_s = int(ctx.peer(sizes, s)[0])
        counts.append(n_s)
        peer_keys.append(ctx.peer(keys, s)[:n_s])
    total = sum(counts)

    # 2. Splitters from regular samples (value, rank, position) of every non-empty rank.
    samples = []
    for s in range(w):
        n_s = counts[s]
        for i in range(min(w, n_s)):
            pos = (i + 1) * n_s // w - 1 if w < n_s else i
            samples.append((float(peer_keys[s][pos]), s, pos))
    samples.sort()
    u = len(samples)
    splitters = [samples[max(0, min(u - 1, (d + 1) * u // w - 1))] for d in range(w - 1)] if u else []

    def below(s, split):
        """How many of rank s's sorted keys come at or before the splitter triple."""
        if split is None:
            return counts[s]
        value, srank, spos = split
        probe = torch.tensor([value], dtype=keys.dtype)
        if s < srank:  # equal values of a lower rank come first
            return int(torch.searchsorted(peer_keys[s], probe, right=True))
        if s > srank:  # of a higher rank, after
            return int(torch.searchsorted(peer_keys[s], probe, right=False))
        return min(spos + 1, counts[s])

    # 3. My bucket: the keys after splitter r-1 and up to splitter r, from every rank.
    lo_split = splitters[r - 1] if r > 0 else None
    hi_split = splitters[r] if r < w - 1 else None
    pieces = []
    for s in range(w):
        lo = below(s, lo_split) if lo_split is not None else 0
        hi = below(s, hi_split)
        if hi > lo:
            pieces.append(peer_keys[s][lo:hi])
    got = torch.cat(pieces) if pieces else keys[:0]
    held = got.numel()
    bucket[:held].copy_(got.sort().values)
    sizes[1] = held
    ctx.barrier()  # every bucket is sorted and its size published

    # 4. Rebalance: my range of the global order, pulled from the buckets that hold it.
    base, extra = divmod(total, w)
    lo, length = r * base + min(r, extra), base + (1 if r < extra else 0)
    out, at, start = outputs.sorted, 0, 0
    for s in range(w):
        held_s = int(ctx.peer(sizes, s)[1])
        a, b = max(lo, start), min(lo + length, start + held_s)
        if b > a:
            out[at:at + b - a].copy_(ctx.peer(bucket, s)[a - start:b - start])
            at += b - a
        start += held_s
    outputs.set_size("sorted", 0, length)
    ctx.barrier()  # nobody reads my buffers any more
