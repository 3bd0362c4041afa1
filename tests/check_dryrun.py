"""Checks what `pkb dryrun --save-outputs DIR` wrote for a collective problem: every
rank_<r>.pt and rank_<r>_inputs.pt loads with plain torch.load (weights_only=True, the
default) and holds what the problem's description says.

usage: check_dryrun.py PROBLEM[,PROBLEM...] DIR W
(several problems: each one's files in DIR/<problem>/, as pkb saves several)
"""
import sys

import torch


def check(problem, d, world):
    ys = [torch.load(f"{d}/rank_{r}.pt") for r in range(world)]
    xs = [torch.load(f"{d}/rank_{r}_inputs.pt")["x"] for r in range(world)]
    f = [x.double() for x in xs]
    root = 0
    for r in range(world):
        y = ys[r].double()
        if problem == "coll_allreduce":
            want = sum(f)
        elif problem == "coll_allgather":
            want = torch.stack(f)
        elif problem == "coll_broadcast":
            want = f[root]
        elif problem == "coll_reduce":
            want = sum(f) if r == root else f[r]
        elif problem == "coll_scatter":
            want = f[root][r]
        elif problem == "coll_gather":
            want = torch.stack(f) if r == root else torch.empty(0, *f[r].shape, dtype=torch.double)
        elif problem == "coll_reducescatter":
            m = f[0].shape[0] // world
            want = sum(f)[r * m:(r + 1) * m]
        elif problem == "coll_alltoall":
            want = torch.stack([f[j][r] for j in range(world)])
        else:
            raise SystemExit(f"no check for {problem}")
        if y.shape != want.shape or not torch.equal(y, want):
            raise SystemExit(f"{problem} rank {r}: output {tuple(y.shape)} differs from the expected {tuple(want.shape)}")
        if xs[r].dtype != ys[r].dtype:
            raise SystemExit(f"{problem} rank {r}: dtype {ys[r].dtype}, input {xs[r].dtype}")
    # Inputs are random and differ by rank (the original's were constant).
    if world > 1 and problem != "coll_scatter" and torch.equal(xs[0], xs[1]):
        raise SystemExit(f"{problem}: ranks 0 and 1 got identical inputs")
    print(f"{problem} W={world}: ok")


def main():
    problems, d, world = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
    for p in problems:
        check(p, f"{d}/{p}" if len(problems) > 1 else d, world)


main()
