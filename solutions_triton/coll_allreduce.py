"""coll_allreduce in Triton, no NCCL: y = the sum over ranks of x, on every rank.

Algorithm (one pass of reduce-scatter + all-gather, as solutions_cuda/coll_allreduce.cu):
the flattened tensor is cut into W contiguous slices and rank r owns slice r. Its kernel
loads slice r of every rank's x straight from the symmetric heap (NVLink loads: rank p's
copy of x is `x + offsets[p]` elements away, pkb.triton.peer), sums in fp32, rounds once,
and stores the sum into slice r of every rank's y (NVLink stores).

A call is barrier, kernel, barrier on ctx.stream (torch's current stream, where Triton
launches): after the first every rank's x is ready and every y may be written; after the
second nobody reads my x or writes my y any more. The kernels compile in pkb_init (untimed)
with launches that touch nothing.
"""
import torch
import triton
import triton.language as tl

from pkb import triton as pkt

BLOCK = 4096


@triton.jit(do_not_specialize=["rank", "begin", "end"])
def allreduce_kernel(x_ptr, y_ptr, offsets, rank, begin, end, WORLD: tl.constexpr, BLOCK: tl.constexpr):
    idx = begin + tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < end
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for p in range(0, WORLD):
        acc += tl.load(pkt.peer(x_ptr, offsets, p) + idx, mask=mask, other=0.0).to(tl.float32)
    total = acc.to(y_ptr.dtype.element_ty)
    for j in range(0, WORLD):  # rank+1 first: at any time ranks write to different peers
        p = (rank + 1 + j) % WORLD
        tl.store(pkt.peer(y_ptr, offsets, p) + idx, total, mask=mask)


def launch(x, y, offsets, rank, world, begin, end):
    grid = (max(1, triton.cdiv(end - begin, BLOCK)),)
    allreduce_kernel[grid](x, y, offsets, rank, begin, end, WORLD=world, BLOCK=BLOCK, num_warps=8)


def pkb_init(ctx, inputs, outputs):
    dtype = outputs.y.dtype
    if dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise TypeError(f"coll_allreduce: needs bf16, fp16 or fp32, not {dtype}")
    ctx.user = ctx.peer_offsets(dtype)
    scratch = torch.zeros(BLOCK, dtype=dtype, device=ctx.device)
    launch(scratch, scratch, torch.zeros_like(ctx.user), ctx.rank, ctx.world, 0, 0)  # compiles, writes nothing
    if ctx.device.type == "cuda":
        torch.cuda.synchronize(ctx.device)


def pkb_run(ctx, inputs, outputs):
    x, y = inputs.x, outputs.y
    n = x.numel()
    step = triton.cdiv(triton.cdiv(n, ctx.world), 16) * 16  # slices of whole 16-element runs
    begin, end = min(n, ctx.rank * step), min(n, (ctx.rank + 1) * step)
    ctx.barrier()
    launch(x, y, ctx.user, ctx.rank, ctx.world, begin, end)
    ctx.barrier()
