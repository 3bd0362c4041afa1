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


def disco(xs, w, spec):
    az = 2 if w % 2 == 0 else 1
    npol = w // az
    nl, nlon_l = xs[0]["x"].shape[2], xs[0]["x"].shape[3]
    nlon = nlon_l * az
    # the whole field: latitude blocks by polar index, longitude blocks by azimuth index
    field = torch.cat([torch.cat([xs[p * az + a]["x"].to(f64) for a in range(az)], dim=3) for p in range(npol)], dim=2)
    idx, val = xs[0]["psi_idx"], xs[0]["psi_val"].to(f64)  # (polar, K, T, E)
    _, kb, t, e = idx.shape
    q = torch.arange(nlon)
    y = torch.zeros(field.shape[0], field.shape[1], kb, t, nlon, dtype=f64)
    for p in range(npol):
        for k in range(kb):
            for j in range(e):
                lat = p * nl + idx[p, k, :, j] // nlon            # (T,) global latitude
                lon = (idx[p, k, :, j] % nlon).unsqueeze(1) + q  # (T, nlon)
                g = field[:, :, lat.unsqueeze(1), lon % nlon]     # (B, C, T, nlon)
                y[:, :, k] += g * val[p, k, :, j].view(1, 1, t, 1)
    out = torch.einsum("bckxy,ock->boxy", y, xs[0]["weight"].to(f64)) + xs[0]["bias"].to(f64).view(1, -1, 1, 1)
    res = []
    for r in range(w):
        p, a = r // az, r % az
        res.append([out[:, :, p * nl:(p + 1) * nl, a * nlon_l:(a + 1) * nlon_l]])
    return res


PROBLEMS["sci_spherical_disco_conv"] = disco
