"""The recommendation problems recomputed from every rank's saved inputs (see check_problem.py)."""
import torch

f64 = torch.float64


def embedding_lookup(xs, w, spec):
    table = torch.cat([x["table"] for x in xs])  # the whole (W*M, N) table, rank order
    return [[table[x["indices"]].to(f64)] for x in xs]


def kjt_all2all(xs, w, spec):
    """KJTAllToAll: rank r keeps features [off_r, off_r + ks_r) of every rank's KJT, ordered
    feature-major, then by source rank, then by sample. KF is the default preset's."""
    kf = spec["sizes"]["default"]["KF"]
    ks = [kf * (1 + d % 3) for d in range(w)]
    off = [sum(ks[:d]) for d in range(w)]
    f = sum(ks)
    batch = xs[0]["lengths"].numel() // f
    out = []
    for r in range(w):
        lengths, values = [], []
        for k in range(ks[r]):
            for s in range(w):
                ln = xs[s]["lengths"].view(f, batch)
                start = torch.cat([torch.zeros(1, dtype=torch.long), ln.reshape(-1).cumsum(0)])
                feat = off[r] + k
                lengths.append(ln[feat])
                values.append(xs[s]["values"][int(start[feat * batch]):int(start[(feat + 1) * batch])])
        out.append([torch.cat(lengths), torch.cat(values), torch.tensor(w * batch, dtype=torch.long),
                    torch.full((w,), batch, dtype=torch.long)])
    return out


PROBLEMS = {
    "rec_sharded_embedding_lookup": embedding_lookup,
    "rec_torchrec_kjt_all2all": kjt_all2all,
}
