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


def _rotmat(q):
    q = q / q.norm(dim=-1, keepdim=True)
    w, x, y, z = q.unbind(-1)
    return torch.stack([
        torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        torch.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        torch.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def gsplat(xs, w, spec):
    """Per (camera, Gaussian) in fp64: the EWA projection as T T^T with T = J R_c R_g diag(s),
    the visibility tests, then the pairs of each camera owner by source, camera, Gaussian."""
    a = spec["args"]
    n = xs[0]["means"].shape[0]
    cl = xs[0]["viewmats"].shape[0]
    views = torch.cat([x["viewmats"].to(f64) for x in xs])
    ks = torch.cat([x["Ks"].to(f64) for x in xs])
    # the principal point is the image centre: IW = 2 cx, IH = 2 cy (exact in bf16)
    iw, ih = float(2 * xs[0]["Ks"][0, 0, 2]), float(2 * xs[0]["Ks"][0, 1, 2])
    per_source = []
    for s, x in enumerate(xs):
        rg = _rotmat(x["quats"].to(f64)) * x["scales"].to(f64).unsqueeze(-2)  # (n, 3, 3)
        mean = x["means"].to(f64)
        rows = []
        for c in range(views.shape[0]):
            rc, tc, k = views[c, :3, :3], views[c, :3, 3], ks[c]
            p = mean @ rc.T + tc  # (n, 3) in the camera frame
            fx, fy, cx, cy = k[0, 0], k[1, 1], k[0, 2], k[1, 2]
            limx = (0.5 * iw / fx) * 0.3
            limy = (0.5 * ih / fy) * 0.3
            u = (p[:, 0] / p[:, 2]).clamp(-(cx / fx + limx), (iw - cx) / fx + limx) * p[:, 2]
            v = (p[:, 1] / p[:, 2]).clamp(-(cy / fy + limy), (ih - cy) / fy + limy) * p[:, 2]
            z = p[:, 2]
            jac = torch.zeros(n, 2, 3, dtype=f64)
            jac[:, 0, 0] = fx / z
            jac[:, 0, 2] = -fx * u / z ** 2
            jac[:, 1, 1] = fy / z
            jac[:, 1, 2] = -fy * v / z ** 2
            t = jac @ rc @ rg
            cov = t @ t.transpose(-1, -2) + a["eps2d"] * torch.eye(2, dtype=f64)
            det = cov[:, 0, 0] * cov[:, 1, 1] - cov[:, 0, 1] * cov[:, 1, 0]
            conic = torch.stack([cov[:, 1, 1], -cov[:, 0, 1], cov[:, 0, 0]], -1) / det.unsqueeze(-1)
            m2 = torch.stack([fx * p[:, 0] / z + cx, fy * p[:, 1] / z + cy], -1)
            rad = torch.ceil(3.33 * torch.stack([cov[:, 0, 0], cov[:, 1, 1]], -1).sqrt())
            ok = (z > a["near_plane"]) & (z < a["far_plane"])
            ok &= (m2[:, 0] + rad[:, 0] > 0) & (m2[:, 0] - rad[:, 0] < iw)
            ok &= (m2[:, 1] + rad[:, 1] > 0) & (m2[:, 1] - rad[:, 1] < ih)
            g = ok.nonzero().squeeze(-1)
            rows.append((c, g, rad[g], m2[g], z[g], conic[g], x["opacities"][g].to(f64), x["colors"][g].to(f64)))
        per_source.append(rows)
    out = []
    for r in range(w):
        parts = [[] for _ in range(8)]
        for s in range(w):
            for c, g, rad, m2, z, conic, op, col in per_source[s][r * cl:(r + 1) * cl]:
                vals = [torch.full_like(g, c - r * cl, dtype=torch.int32), (g + s * n).to(torch.int32),
                        rad.to(torch.int32), m2, z, conic, op, col]
                for i, v in enumerate(vals):
                    parts[i].append(v)
        out.append([torch.cat(p) for p in parts])
    return out


PROBLEMS["misc_gsplat_projection_all2all"] = gsplat
