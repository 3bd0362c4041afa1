"""tp_gemm_allgather in Triton, no NCCL: rank r computes C_r = a @ b = A_r @ B_r (M, Nl), and
every rank returns c = cat(C_0, ..., C_{W-1}) along dim 1 (M, N).

Algorithm: the GEMM and the all-gather are one kernel. Each program computes a BM x BN tile
of C_r with tl.dot (fp32 accumulation, rounded once as in the reference) and stores it
straight into column block r of every rank's c through the symmetric heap (NVLink stores:
rank p's copy of c is `c + offsets[p]` elements away, pkb.triton.peer), so the gather
overlaps the other tiles' math. K is a compile-time constant (one compilation per size). Each rank receives the W-1 other blocks, the all-gather
minimum.

A call is barrier, kernel, barrier on ctx.stream: after the first every rank's c may be
written (pkb poisons it before the call); after the second every block has landed
everywhere. The barriers are pkb.triton's, written in Triton (ctx.barrier() is the same
protocol in pkb's own CUDA kernel). The kernel compiles in pkb_init (untimed) with a launch that writes nothing.
"""
import torch
import triton
import triton.language as tl

from pkb import triton as pkt

BM, BN, BK = 128, 64, 64


@triton.jit(do_not_specialize=["rank"])
def gemm_allgather_kernel(a_ptr, b_ptr, c_ptr, offsets, rank, M, N, Nl, K: tl.constexpr, WORLD: tl.constexpr,
                          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PRECISION: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :],
                    mask=(rows[:, None] < M) & ((k + ks)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + ks)[:, None] * Nl + cols[None, :],
                    mask=((k + ks)[:, None] < K) & (cols[None, :] < Nl), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tile = acc.to(c_ptr.dtype.element_ty)
    out = rows[:, None].to(tl.int64) * N + (rank * Nl + cols)[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < Nl)
    for j in range(0, WORLD):  # rank+1 first: at any time ranks write to different peers
        p = (rank + 1 + j) % WORLD
        tl.store(pkt.peer(c_ptr, offsets, p) + out, tile, mask=mask)


def launch(a, b, c, offsets, rank, world, m, n, k, nl):
    precision = "ieee" if a.dtype == torch.float32 else "tf32"  # no TF32 for fp32: the reference has none
    grid = (triton.cdiv(m, BM), triton.cdiv(nl, BN))
    gemm_allgather_kernel[grid](a, b, c, offsets, rank, m, n, nl, K=k, WORLD=world, BM=BM, BN=BN, BK=BK,
                                PRECISION=precision, num_warps=4, num_stages=3)


def pkb_init(ctx, inputs, outputs):
    dtype = outputs.c.dtype
    if dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise TypeError(f"tp_gemm_allgather: needs bf16, fp16 or fp32, not {dtype}")
    ctx.user = ctx.peer_offsets(dtype)
    # Compile now: K as the real calls have it (the meta tensors carry the shapes), the
    # other sizes with the same specialisations (multiples of 16), M = 0 so nothing is written.
    k = inputs.a.shape[1]
    s = torch.zeros(16, dtype=dtype, device=ctx.device)
    launch(s, s, s, torch.zeros_like(ctx.user), ctx.rank, ctx.world, 0, 64, k, 64)
    pkt.barrier_on_stream(ctx)
    if ctx.device.type == "cuda":
        torch.cuda.synchronize(ctx.device)


def pkb_run(ctx, inputs, outputs):
    a, b, c = inputs.a, inputs.b, outputs.c
    m, k = a.shape
    nl, n = b.shape[1], c.shape[1]
    pkt.barrier_on_stream(ctx)
    launch(a, b, c, ctx.user, ctx.rank, ctx.world, m, n, k, nl)
    pkt.barrier_on_stream(ctx)
