"""The rendering and sorting problems recomputed from every rank's saved inputs (see check_problem.py)."""
import torch

f64 = torch.float64


def sample_sort(xs, w, spec):
    keys = torch.cat([x["values"][: int(x["count"])].to(f64) for x in xs]).sort().values
    total = keys.numel()
    base, extra = divmod(total, w)
    out = []
    for r in range(w):
        lo = r * base + min(r, extra)
        out.append([keys[lo: lo + base + (1 if r < extra else 0)]])
    return out


PROBLEMS = {
    "misc_sample_sort": sample_sort,
}
