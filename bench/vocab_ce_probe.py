"""Where tp_vocab_parallel_cross_entropy's reference spends its time at --size large.

The reference (reference/tp_vocab_parallel_cross_entropy.cpp) takes each token's max from
the bf16 logits (widened to fp32), finds the target's logit (a mask, local ids, a gather),
then sums exp(z - max) as three passes over fp32: the shifted copy (bf16 - fp32 is fp32),
exp_ in place and the row sum; the loss is log(sum) - (z_target - max), rounded to bf16. Its
three all-reduces are of B*S values, in place, and do nothing at W = 1: they are left out.
This times each step alone on the large preset's shapes (B x S tokens over the vocabulary V,
W = 1 so Vl = V, bf16 logits), the whole body, and the other ATen ways to the same loss
(logsumexp, log_softmax, cross_entropy, the sum of exps in bf16 or in row chunks that keep
the fp32 temporaries in L2), beside one read of the logits (the memory's pace). Prints a
markdown table, then each alternative's agreement with the reference's loss. Needs CUDA.

Its steps time the reference as it was before its rewrite, which these tables decided:
the reference now, at one rank on CUDA, does the alternative "cross_entropy on bf16".

Smoke test on the CPU (host clock, small shapes): PKB_PROBE_DEVICE=cpu python3
bench/vocab_ce_probe.py 2 64 1024.
"""
import sys

import torch
import torch.nn.functional as F

from event_timing import DEVICE as DEV, print_probe



def main():
    b, s, v = (int(a) for a in (sys.argv[1:4] if len(sys.argv) > 3 else (4, 2048, 50304)))
    g = torch.Generator(device=DEV).manual_seed(0)
    x = torch.randn(b, s, v, device=DEV, generator=g).bfloat16()
    t = torch.randint(0, v, (b, s), device=DEV, generator=g)
    start = 0  # rank 0 of 1: the slice is the whole vocabulary

    def picked_of(zmax):  # the target's logit minus the max, 0 off this rank's slice
        outside = (t < start).logical_or(t >= start + v)
        local = (t - start).masked_fill(outside, 0)
        return (x.gather(-1, local.unsqueeze(-1)).squeeze(-1).float() - zmax).masked_fill(outside, 0.0)

    def body32():  # the reference up to the rounding (fp32 loss)
        zmax = x.amax(-1).float()
        picked = picked_of(zmax)
        sum_exp = torch.sub(x, zmax.unsqueeze(-1)).exp_().sum(-1)
        return sum_exp.log() - picked

    def body():
        return body32().to(torch.bfloat16)

    zmax = x.amax(-1).float()
    picked = picked_of(zmax)
    shifted = torch.sub(x, zmax.unsqueeze(-1))
    ex = shifted.exp()
    buf = torch.empty_like(shifted)
    sum_exp = ex.sum(-1)
    zt = x.gather(-1, t.unsqueeze(-1)).squeeze(-1)
    rows = x.view(-1, v)

    def chunked(n):  # the reference's three passes, n rows at a time: the fp32 temps may stay in L2
        zm = x.amax(-1).float()
        out = torch.empty(b * s, device=DEV)
        flat = zm.view(-1)
        for i in range(0, b * s, n):
            torch.sum(torch.sub(rows[i:i + n], flat[i:i + n, None]).exp_(), -1, out=out[i:i + n])
        return out.view(b, s).log() - picked_of(zm)

    def exp_bf16():  # shift and exp in bf16 (each rounded), the sum accumulated into fp32
        zm = x.amax(-1, keepdim=True)
        se = torch.sub(x, zm).exp_().sum(-1, dtype=torch.float32)
        return se.log() - picked_of(zm.squeeze(-1).float())

    alternatives = [
        ("logsumexp of an fp32 copy, minus the target logit",
         lambda: torch.logsumexp(x.float(), -1) - zt.float()),
        ("logsumexp on bf16 (shift, exp and result in bf16), minus the target logit",
         lambda: torch.logsumexp(x, -1).float() - zt.float()),
        ("log_softmax with dtype=fp32 (bf16 widened first), gather of the target",
         lambda: -torch.log_softmax(x, -1, dtype=torch.float32).gather(-1, t.unsqueeze(-1)).squeeze(-1)),
        ("log_softmax in bf16 (fp32 inside, rounded once), gather of the target",
         lambda: -torch.log_softmax(x, -1).gather(-1, t.unsqueeze(-1)).squeeze(-1)),
        ("cross_entropy of an fp32 copy, reduction none",
         lambda: F.cross_entropy(x.float().view(-1, v), t.view(-1), reduction="none").view(b, s)),
        ("cross_entropy on bf16, reduction none",
         lambda: F.cross_entropy(rows, t.view(-1), reduction="none").view(b, s)),
        ("sum of exp: exp(x.float() - max).sum (an fp32 copy first)",
         lambda: torch.exp(x.float() - zmax.unsqueeze(-1)).sum(-1).log() - picked_of(zmax)),
        (f"sum of exp: the reference's passes 128 rows at a time (fp32 temps {128 * v * 4 / 1e6:.0f} MB)",
         lambda: chunked(128)),
        (f"sum of exp: the reference's passes 512 rows at a time (fp32 temps {512 * v * 4 / 1e6:.0f} MB)",
         lambda: chunked(512)),
        ("sum of exp: shift and exp in bf16, sum into fp32", exp_bf16),
    ]
    steps = [
        ("one read of the logits (sum)", lambda: x.sum()),
        ("max of each row from bf16, widened (amax)", lambda: x.amax(-1).float()),
        ("the target: mask, local ids, gather, minus the max", lambda: picked_of(zmax)),
        ("shifted fp32 copy: bf16 logits - fp32 max", lambda: torch.sub(x, zmax.unsqueeze(-1))),
        ("exp over fp32 (the reference's exp_ in place)", lambda: torch.exp(shifted, out=buf)),
        ("sum of each fp32 row", lambda: ex.sum(-1)),
        ("log, minus the target, rounded to bf16", lambda: (sum_exp.log() - picked).to(torch.bfloat16)),
        ("whole body (the reference's; all-reduces no-ops at W = 1)", body),
    ]
    gb = x.numel() * 2 / 1e9
    alternatives = print_probe(f"tp_vocab_parallel_cross_entropy steps, B={b} S={s} V={v} (W=1, {gb:.2f} GB of bf16 logits)",
                               steps, alternatives, "alt: ")

    ref32, ref = body32(), body()
    print("\nagreement with the reference's loss (fp32 before its rounding; bf16 outputs as rounded):")
    for name, fn in alternatives:
        y = fn()
        d = (y.float() - ref32).abs().max().item()
        off = (y.to(torch.bfloat16) != ref).sum().item()
        print(f"- {name} ({str(y.dtype).removeprefix('torch.')}): max |diff| {d:.2e}, "
              f"bf16 outputs differing {off} of {ref.numel()}")


if __name__ == "__main__":
    main()
