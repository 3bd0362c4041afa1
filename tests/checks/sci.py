"""The scientific-computing problems recomputed from every rank's saved inputs (see check_problem.py)."""
import torch

f64 = torch.float64
c128 = torch.complex128


def rfft2(xs, w, spec):
    field = torch.cat([x["x"].to(f64) for x in xs], dim=2)  # columns in rank order
    y = torch.fft.rfft2(field, norm="ortho")
    return [[part] for part in y.chunk(w, dim=1)]


def irfft2(xs, w, spec):
    half = torch.cat([x["x"].to(c128) for x in xs], dim=2)  # rows in rank order
    h, xf = half.shape[2], half.shape[3]
    field = torch.fft.irfft2(half, s=(h, 2 * (xf - 1)), norm="ortho")
    return [[part] for part in field.chunk(w, dim=3)]


PROBLEMS = {
    "sci_distributed_rfft2": rfft2,
    "sci_distributed_irfft2": irfft2,
}


def kalman(xs, w, spec):
    nue = spec["args"]["kalman_nue"]
    lam = xs[0]["kalman_lambda"].to(f64)
    total = 0.0
    for x in xs:
        for hi, pi in zip(x["H"].to(f64), x["P"].to(f64)):
            total = total + lam + (hi.T @ pi @ hi).squeeze()
    a = 1.0 / total
    weights, ps = [], []
    for x in xs:
        ks = [pi @ hi for hi, pi in zip(x["H"].to(f64), x["P"].to(f64))]
        weights += [wi + a * x["error"].to(f64) * ki for wi, ki in zip(x["weights"].to(f64), ks)]
        ps.append(torch.stack([(pi - a * ki @ ki.T) / lam for pi, ki in zip(x["P"].to(f64), ks)]))
    all_w = torch.stack(weights)
    return [[all_w, ps[r], nue * lam + 1 - nue] for r in range(w)]


PROBLEMS["sci_kalman_filter_optimizer"] = kalman
