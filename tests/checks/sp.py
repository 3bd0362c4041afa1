"""The Sequence Parallel (Ulysses) problems recomputed from every rank's saved inputs (see
check_problem.py). All of them move data only, so the recomputations are exact copies."""
import torch

f64 = torch.float64


def all2all(xs, w, spec):
    # rank r: row block r of every rank's x, side by side along dim 1
    return [[torch.cat([x["x"].to(f64).chunk(w)[r] for x in xs], dim=1)] for r in range(w)]


def allgather(xs, w, spec):
    y = torch.cat([x["x"].to(f64) for x in xs])
    return [[y] for _ in xs]


def seq_scatter_heads(xs, w, spec):
    return [[torch.cat([x["x"].to(f64).chunk(w, dim=2)[r] for x in xs], dim=1)] for r in range(w)]


def heads_scatter_seq(xs, w, spec):
    out = []
    padded = []
    for x in xs:
        t = x["x"].to(f64)
        pad = -t.shape[1] % w
        padded.append(torch.cat([t, t.new_zeros(t.shape[0], pad, *t.shape[2:])], dim=1))
    for r in range(w):
        out.append([torch.cat([p.chunk(w, dim=1)[r] for p in padded], dim=2)])
    return out


def seq_scatter_heads_qkv(xs, w, spec):
    out = []
    for r in range(w):
        parts = []
        for x in xs:
            b, t, f = x["qkv"].shape
            v = x["qkv"].to(f64).view(b, t, 3, f // 3)
            parts.append(v.chunk(w, dim=3)[r].reshape(b, t, f // w))
        out.append([torch.cat(parts, dim=1)])
    return out


PROBLEMS = {
    "sp_ulysses_all2all": all2all,
    "sp_ulysses_allgather": allgather,
    "sp_ulysses_allgather_variable": allgather,
    "sp_gather_seq_scatter_heads": seq_scatter_heads,
    "sp_gather_heads_scatter_seq": heads_scatter_seq,
    "sp_gather_seq_scatter_heads_qkv": seq_scatter_heads_qkv,
}
