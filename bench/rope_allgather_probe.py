"""Where cp_rope_allgather's reference spends its time at --size large.

The reference (reference/cp_rope_allgather.cpp) rotates q and k (B, S, H, D bf16) by the
rotary tables cos, sin (B, S, D bf16, widened to fp32 on every call) in fp32, by halves:
out_lo = lo*c - hi*s and out_hi = hi*c + lo*s, each half two products into fp32, a sum in
place and the rounding copy into the bf16 output, then all-gathers each along the sequence
(at W = 1 one copy into a new tensor; the regroup after it is a view). This times each pass
alone on the large preset's shapes (B x T tokens, H heads of D, W = 1 so S = T), the
rotation of q as the reference does it, the whole body (q and k, the gathers as copies),
and other ATen forms of the rotation: addcmul by halves, both halves in one broadcast over
(..., 2, D/2) with the sign folded into sin (fp32, and in bf16 as the original rounded),
the 2 x 2 rotation as one broadcast product and a sum, and a complex product - beside one
read and one copy of q (the memory's pace). Prints a markdown table, then each form's
agreement with the reference's q_embed. Needs CUDA.

Its steps time the reference as it was before its rewrite, which these tables decided:
the reference now does the alternative "addcmul by halves".

Smoke test on the CPU (host clock, small shapes): PKB_PROBE_DEVICE=cpu python3
bench/rope_allgather_probe.py 2 64 4 64.
"""
import sys

import torch

from event_timing import DEVICE as DEV, print_probe



def tables(b, s, d, g):  # as make_inputs: base 10000, cat(freqs, freqs), positions offset per row
    f64 = dict(device=DEV, dtype=torch.float64)
    offset = torch.randint(0, 4096, (b,), device=DEV, generator=g).double()
    pos = offset.unsqueeze(1) + torch.arange(0, s, **f64).unsqueeze(0)
    inv_freq = torch.pow(10000.0, torch.arange(0, d, 2, **f64).div_(-d))
    emb = torch.cat((pos.unsqueeze(-1) * inv_freq,) * 2, -1)
    return emb.cos().bfloat16(), emb.sin().bfloat16()


def rope(x, cos, sin):  # the reference's: by halves, fp32 products and sum, rounded once
    half = x.shape[-1] // 2
    c, s = cos.float().unsqueeze(2), sin.float().unsqueeze(2)
    lo, hi = x[..., :half], x[..., half:]
    out = torch.empty_like(x)
    out[..., :half].copy_((lo * c[..., :half]).sub_(hi * s[..., :half]))
    out[..., half:].copy_((hi * c[..., half:]).add_(lo * s[..., half:]))
    return out


def main():
    b, t, h, d = (int(a) for a in (sys.argv[1:5] if len(sys.argv) > 4 else (1, 65536, 32, 128)))
    s, half = t, d // 2  # W = 1: the shard is the whole sequence
    g = torch.Generator(device=DEV).manual_seed(0)
    q = torch.randn(b, s, h, d, device=DEV, generator=g).bfloat16()
    k = torch.randn(b, s, h, d, device=DEV, generator=g).bfloat16()
    cos, sin = tables(b, s, d, g)

    def body():  # all_gather at W = 1: a copy into a new tensor, the regroup a view
        return rope(q, cos, sin).clone(), rope(k, cos, sin).clone()

    c, sn = cos.float().unsqueeze(2), sin.float().unsqueeze(2)
    lo, hi = q[..., :half], q[..., half:]
    p1, p2 = lo * c[..., :half], hi * sn[..., :half]
    buf = torch.empty_like(p1)
    out = torch.empty_like(q)
    qe = rope(q, cos, sin)

    def addcmul_halves(x):  # one product into fp32, then the other product, the sum and the rounding in one op
        c, s = cos.float().unsqueeze(2), sin.float().unsqueeze(2)
        lo, hi = x[..., :half], x[..., half:]
        y = torch.empty_like(x)
        torch.addcmul(lo * c[..., :half], hi, s[..., :half], value=-1, out=y[..., :half])
        torch.addcmul(hi * c[..., half:], lo, s[..., half:], out=y[..., half:])
        return y

    def swapped(x):  # [hi, lo]: rotate_half without its sign (flip copies: no negative strides)
        return x.view(*x.shape[:-1], 2, half).flip(-2).view(x.shape)

    def signed(tab):  # the table with the sign of rotate_half folded in: [-s1, s2]
        return torch.cat((-tab[..., :half], tab[..., half:]), -1).unsqueeze(2)

    def broadcast_fp32(x):
        y = torch.empty_like(x)
        return torch.addcmul(x * cos.float().unsqueeze(2), swapped(x), signed(sin.float()), out=y)

    def broadcast_bf16(x):  # each product and the sum rounded to bf16, as the original did
        return x * cos.unsqueeze(2) + swapped(x) * signed(sin)

    def rotation_2x2(x):  # out[j] = sum_i M[j, i] x[i], M = [[c1, -s1], [s2, c2]]: product, then a sum over i
        c, s = cos.float(), sin.float()
        m = torch.stack((torch.stack((c[..., :half], -s[..., :half]), -2),
                         torch.stack((s[..., half:], c[..., half:]), -2)), -3)  # (B, S, 2, 2, D/2)
        x2 = x.view(*x.shape[:-1], 1, 2, half)
        return (x2 * m.unsqueeze(2)).sum(-2).view(x.shape).to(x.dtype)

    def complex_form(x):  # pairs (x1_j, x2_j) interleaved by a copy, times cos + i sin (c1 = c2, s1 = s2)
        xc = torch.view_as_complex(x.view(*x.shape[:-1], 2, half).transpose(-1, -2).float().contiguous())
        w = torch.complex(cos[..., :half].float(), sin[..., :half].float()).unsqueeze(2)
        y = torch.view_as_real(xc * w).transpose(-1, -2)
        return y.reshape(x.shape).to(x.dtype)

    alternatives = [(name, lambda fn=fn: fn(q)) for name, fn in [
        ("addcmul by halves (fp32; 2 passes a half)", addcmul_halves),
        ("one broadcast over (..., 2, D/2), flip, signed sin, addcmul (fp32)", broadcast_fp32),
        ("the same in bf16: each product and the sum rounded", broadcast_bf16),
        ("2 x 2 rotation: broadcast product (2x the fp32 rows), sum over pairs", rotation_2x2),
        ("complex product (an interleaving fp32 copy first)", complex_form),
    ]]
    steps = [
        ("one read of q (sum)", lambda: q.sum()),
        ("one copy of q (read + write)", lambda: q.clone()),
        ("tables widened to fp32 (cos and sin; in each rotation, twice a body)", lambda: (cos.float(), sin.float())),
        ("a half's product: lo * cos into fp32 (4 of these)", lambda: lo * c[..., :half]),
        ("a half's sum: fp32 - fp32 (the reference's sub_ in place; 2 of these)", lambda: torch.sub(p1, p2, out=buf)),
        ("a half's rounding copy: fp32 into bf16 out, strided (2 of these)", lambda: out[..., :half].copy_(p1)),
        ("rotation of q as the reference", lambda: rope(q, cos, sin)),
        ("the gather at W = 1: copy of q_embed", lambda: qe.clone()),
        ("whole body (q and k rotated and gathered)", body),
    ]
    gb = q.numel() * 2 / 1e9
    alternatives = print_probe(f"cp_rope_allgather steps, B={b} T={t} H={h} D={d} (W=1, q and k {gb:.2f} GB each in bf16)",
                               steps, alternatives, "alt, rotation of q: ")

    print("\nagreement with the reference's q_embed (bf16):")
    for name, fn in alternatives:
        y = fn()
        diff = (y.float() - qe.float()).abs()
        print(f"- {name}: max |diff| {diff.max().item():.2e}, differing {(diff > 0).sum().item()} of {qe.numel()}")


if __name__ == "__main__":
    main()
