"""Checks what `pkb dryrun --save-outputs DIR` wrote for a reference-API test problem
(tests/api): recomputes every rank's outputs from all ranks' saved inputs (plain
torch.load) and asserts they are equal, dtype and shape included.

usage: check_api.py PROBLEM[,PROBLEM...] DIR W
(several problems: each one's files in DIR/<problem>/, as pkb saves several)
"""
import os
import sys
import tomllib

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def outputs(y):
    return [y] if isinstance(y, torch.Tensor) else [y[f"output_{i}"] for i in range(len(y))]


def grid(xs, w, args):
    tp = 2 if w % 2 == 0 else 1
    dp = w // tp
    x = [i["x"] for i in xs]
    out = []
    for r in range(w):
        row, col = r // tp, r % tp
        tp_sum = sum(x[row * tp + i] for i in range(tp))
        dp_gather = torch.cat([x[col + tp * k] for k in reversed(range(dp))])
        even_sum = sum(x[i] for i in range(0, w, 2)) if r % 2 == 0 else x[r]
        out.append([tp_sum, dp_gather, even_sum])
    return out


def ring(xs, w, args):
    hops = args["hops"]
    x = [i["x"] for i in xs]
    return [[sum(x[(r - h) % w] for h in range(hops + 1)), x[r ^ 1] if (r ^ 1) < w else x[r]] for r in range(w)]


def uneven(xs, w, args):
    out = []
    for r in range(w):
        parts = []
        for s in range(w):
            start = sum(s + d + 1 for d in range(r))  # rows rank s sent to ranks before r
            parts.append(xs[s]["x"][start:start + s + r + 1])
        out.append([torch.cat(parts)])
    return out


def dynamic(xs, w, args):
    a = torch.cat([i["x"] for i in xs])
    keep = a > 0
    return [[a[keep], keep.nonzero().view(-1)] for _ in range(w)]


def dtypes(xs, w, args):
    weights, scale, negate = args["weights"], args["scale"], args["negate"]
    a = sum(i["a"].long() for i in xs).int()
    b = torch.cat([i["b"] for i in xs])
    c = torch.cat([i["c"] for i in xs])
    z = sum(i["z"] for i in xs)
    terms = torch.stack([i["d"] * weights[r % len(weights)] for r, i in enumerate(xs)])
    d = (terms.sum(0) if args["op"] == "sum" else terms.amax(0)) * scale * (-1 if negate else 1)
    return [[a, b, c, z, d] for _ in range(w)]


CHECKS = {"test_api_grid": grid, "test_api_ring": ring, "test_api_uneven": uneven, "test_api_dynamic": dynamic,
          "test_api_dtypes": dtypes}


def same(got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.is_floating_point and got.dtype.itemsize == 1:  # fp8 has no equality kernel
        return torch.equal(got.view(torch.uint8), want.view(torch.uint8))
    if got.is_complex() or got.dtype == torch.float64:  # summation order may differ
        return torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    return torch.equal(got, want)


def check(problem, d, w):
    xs = [torch.load(f"{d}/rank_{r}_inputs.pt") for r in range(w)]
    ys = [outputs(torch.load(f"{d}/rank_{r}.pt")) for r in range(w)]
    with open(f"{HERE}/api/{problem}.toml", "rb") as f:
        args = tomllib.load(f).get("args", {})
    want = CHECKS[problem](xs, w, args)
    for r in range(w):
        if len(ys[r]) != len(want[r]):
            raise SystemExit(f"{problem} rank {r}: {len(ys[r])} outputs, expected {len(want[r])}")
        for i, (g, e) in enumerate(zip(ys[r], want[r])):
            if not same(g, e):
                raise SystemExit(f"{problem} rank {r} output {i}: {g.dtype} {tuple(g.shape)}, expected "
                                 f"{e.dtype} {tuple(e.shape)} (or the values differ)")
    if w > 1 and torch.equal(xs[0][next(iter(xs[0]))], xs[1][next(iter(xs[1]))]):
        raise SystemExit(f"{problem}: ranks 0 and 1 got identical inputs")
    print(f"{problem} W={w}: ok")


def main():
    problems, d, w = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
    for p in problems:
        check(p, f"{d}/{p}" if len(problems) > 1 else d, w)


main()
