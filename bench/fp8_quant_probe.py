"""Where tp_fp8_block_quant_allgather's reference spends its time at --size large.

The reference (reference/tp_fp8_block_quant_allgather.cpp) takes every 128-wide block's
amax as an inf-norm read from bf16 into fp32, divides by 448 exactly, replaces zero scales
by one, divides the rows by their blocks' scales straight into fp8, and all-gathers codes and
scales (at W = 1 a copy of each). This times each step alone on the same shapes (M x N bf16,
blocks of 128), the whole body, and other ATen forms of the amax (the only step with a
choice that keeps the semantics: the amax of |x| is exact in any of them), the divide in other
dtypes for its pace alone (which part of it is the fp8 output, which the mixed dtypes), beside
one read and one copy of x (the memory's pace). Prints a markdown table. Needs CUDA.
"""
import sys

import torch

from event_timing import median_ms


def main():
    m, n = (int(v) for v in (sys.argv[1:3] if len(sys.argv) > 2 else (8192, 7168)))
    block = 128
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(m, n, device="cuda", generator=g).to(torch.bfloat16)
    xb = x.view(m, n // block, block)
    amax = torch.linalg.vector_norm(xb, float("inf"), dim=-1, dtype=torch.float32)
    s = amax / 448.0
    safe = torch.where(s == 0, torch.ones_like(s), s)
    y = torch.empty(m, n // block, block, device="cuda", dtype=torch.float8_e4m3fn)
    sb = safe.to(torch.bfloat16)
    q = torch.div(xb, safe.unsqueeze(-1))

    def amax_aminmax():
        lo, hi = torch.aminmax(xb, dim=-1)
        return torch.maximum(hi.float(), -lo.float())

    def body():
        a = torch.linalg.vector_norm(xb, float("inf"), dim=-1, dtype=torch.float32)
        sc = a / 448.0
        sf = torch.where(sc == 0, torch.ones_like(sc), sc)
        out = torch.empty(m, n // block, block, device="cuda", dtype=torch.float8_e4m3fn)
        torch.div(xb, sf.unsqueeze(-1), out=out)
        return out.view(m, n).view(torch.uint8).clone(), sc.clone()

    print(f"| {m} x {n} bf16, blocks of {block} | median ms ({30} calls) |")
    print("| --- | --- |")
    for name, fn in [
        ("one read of x (sum)", lambda: x.sum(dtype=torch.float32)),
        ("one copy of x (read + write)", lambda: x.clone()),
        ("amax: inf-norm from bf16 into fp32 (the reference's)", lambda: torch.linalg.vector_norm(xb, float("inf"), dim=-1, dtype=torch.float32)),
        ("amax: inf-norm in bf16, then widened", lambda: torch.linalg.vector_norm(xb, float("inf"), dim=-1).float()),
        ("amax: aminmax in bf16, then max(hi, -lo)", amax_aminmax),
        ("amax: abs then amax (two passes)", lambda: xb.abs().amax(dim=-1).float()),
        ("scale: / 448 and where", lambda: torch.where(amax / 448.0 == 0, torch.ones_like(amax), amax / 448.0)),
        ("codes: x / scale into fp8 (the reference's)", lambda: torch.div(xb, safe.unsqueeze(-1), out=y)),
        ("codes, pace: x / scale into fp32 (no fp8 output)", lambda: torch.div(xb, safe.unsqueeze(-1))),
        ("codes, pace: x / scale in bf16 (one dtype throughout)", lambda: torch.div(xb, sb.unsqueeze(-1))),
        ("codes, pace: fp32 quotient then cast to fp8", lambda: torch.div(xb, safe.unsqueeze(-1)).to(torch.float8_e4m3fn)),
        ("codes, pace: a copy-cast of fp32 into fp8", lambda: q.to(torch.float8_e4m3fn)),
        ("gather at W = 1: copy of the codes", lambda: y.view(torch.uint8).clone()),
        ("the whole body (gathers as copies)", body),
    ]:
        print(f"| {name} | {median_ms(fn, reps=30, warm=3):.3f} |")


if __name__ == "__main__":
    main()
