"""Triton helpers for pkb candidates on the CUDA device: peers' addresses and a barrier over
the signal pads, the Triton twins of include/pkb/device.cuh.

Peers: every heap tensor (inputs, outputs, ctx.symm_alloc buffers) sits at the same offset
in every rank's heap, so rank r's copy of `x` is `x_ptr + offsets[r]` elements away, with
`offsets = ctx.peer_offsets(x.dtype)` passed to the kernel (see peer()).

Signal pads: slot `channel * world + src` of rank r's pad is where src signals r on that
channel. signal() flips a peer's slot 0 -> 1 (release, system scope), wait() flips its own
slot 1 -> 0 (acquire), so pads return to zero and are reused without a reset. The last
channel is pkb's.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def peer(ptr, offsets, rank):
    """`ptr` (into this rank's heap, any element type) as it lies in `rank`'s heap;
    `offsets` is ctx.peer_offsets(dtype) for ptr's element type."""
    return ptr + tl.load(offsets + rank)


@triton.jit
def signal(pad, pad_offsets, rank, world, channel, dst):
    """Signal rank `dst` on `channel` (waits while an earlier signal there is unconsumed).
    `pad` is this rank's pad (ctx.pads[ctx.rank]), `pad_offsets` ctx.pad_offsets."""
    slot = pad + tl.load(pad_offsets + dst) + channel * world + rank
    while tl.atomic_cas(slot, 0, 1, sem="release", scope="sys") != 0:
        pass


@triton.jit
def wait(pad, world, channel, src):
    """Wait for rank `src`'s signal on `channel` and consume it."""
    slot = pad + channel * world + src
    while tl.atomic_cas(slot, 1, 0, sem="acquire", scope="sys") != 1:
        pass


@triton.jit
def barrier(pad, pad_offsets, rank, WORLD: tl.constexpr, channel):
    """A barrier of every rank on `channel`, run by one program on each rank (for example
    under `if tl.program_id(0) == 0:` followed by nothing that other programs depend on,
    or as its own one-program kernel: barrier_on_stream). WORLD is ctx.world."""
    for dst in range(0, WORLD):
        signal(pad, pad_offsets, rank, WORLD, channel, dst)
    for src in range(0, WORLD):
        wait(pad, WORLD, channel, src)


@triton.jit(do_not_specialize=["rank", "channel"])
def _barrier_kernel(pad, pad_offsets, rank, WORLD: tl.constexpr, channel):
    barrier(pad, pad_offsets, rank, WORLD, channel)


def barrier_on_stream(ctx, channel=0):
    """The barrier as a one-program Triton kernel on ctx.stream (ctx.barrier() enqueues the
    same protocol as pkb's own CUDA kernel). Work enqueued after it on any rank sees every
    rank's work enqueued before it."""
    _barrier_kernel[(1,)](ctx.pads[ctx.rank], ctx.pad_offsets, ctx.rank, WORLD=ctx.world, channel=channel,
                          num_warps=1)
