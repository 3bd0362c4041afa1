"""The FSDP / ZeRO problems recomputed in fp64 from every rank's saved inputs (see
tests/check_problem.py)."""
import math
import torch
import torch.nn.functional as F

f64 = torch.float64
PARAMS = ["w1", "b1", "w2", "b2"]


# ---- shared with tests/checks/dp.py: the two-layer MLP's gradients (autograd in fp64) and
# Adam in fp64, written from the problems' math -------------------------------------------

def mlp_grads(x, y, params):
    """Gradients of mean((relu(x w1^T + b1) w2^T + b2 - y)^2) w.r.t. (w1, b1, w2, b2)."""
    ps = [p.to(f64).detach().requires_grad_(True) for p in params]
    out = F.linear(F.relu(F.linear(x.to(f64), ps[0], ps[1])), ps[2], ps[3])
    F.mse_loss(out, y.to(f64)).backward()
    return [p.grad for p in ps]


def mean_grads(xs, params):
    """The data-parallel average over the ranks' batch slices."""
    per_rank = [mlp_grads(r["x"], r["y"], params) for r in xs]
    return [sum(g[i] for g in per_rank) / len(xs) for i in range(len(params))]


def adam(p, m, v, g, step, args, weight_decay=0.0):
    """One Adam (AdamW when weight_decay) step in fp64; returns (p, m, v)."""
    p, m, v, g = (t.to(f64) for t in (p, m, v, g))
    b1, b2 = args["beta1"], args["beta2"]
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    m_hat = m / (1 - b1 ** step)
    v_hat = v / (1 - b2 ** step)
    new = p - args["lr"] * m_hat / (v_hat.sqrt() + args["eps"]) - args["lr"] * weight_decay * p
    return new, m, v


def flat(ts):
    return torch.cat([t.reshape(-1) for t in ts])


def unflat(v, like):
    out, off = [], 0
    for t in like:
        out.append(v[off:off + t.numel()].view(t.shape))
        off += t.numel()
    return out


# ---- the problems ------------------------------------------------------------------------


def pth(ts, p):
    return sum(t.to(f64).abs().pow(p).sum() for t in ts)


def clip_coef(norm, max_norm):
    return max_norm / norm if norm > max_norm else torch.ones((), dtype=f64)


def clip(xs, w, spec):
    p, mx = spec["args"]["norm_type"], spec["args"]["max_norm"]
    names = ["grad_0", "grad_1", "grad_2"]
    norm = sum(pth([r[n] for n in names], p) for r in xs) ** (1 / p)
    c = clip_coef(norm, mx)
    return [[norm] + [r[n].to(f64) * c for n in names] for r in xs]


def clip_ep(xs, w, spec):
    p, mx = spec["args"]["norm_type"], spec["args"]["max_norm"]
    ep_size = max(1, w // 2)
    scale = 1.0 / ep_size if ep_size > 1 else 1.0
    # Every rank's expert term is counted once whether the EP grid is built or not.
    total = sum(pth([r["non_ep"]], p) + pth([r["ep"].to(f64) * scale], p) for r in xs)
    norm = total ** (1 / p)
    c = clip_coef(norm, mx)
    return [[norm, r["non_ep"].to(f64) * c, r["ep"].to(f64) * scale * c] for r in xs]


def zero_adam(xs, w, spec):
    root = xs[0]
    params = [root[n] for n in PARAMS]
    g = flat(mean_grads(xs, params))
    p = flat(params).to(f64)
    part = p.numel() // w
    step = int(root["step"])
    news, out = [], []
    for r, x in enumerate(xs):
        sl = slice(r * part, (r + 1) * part)
        news.append(adam(p[sl], x["exp_avg_part"], x["exp_avg_sq_part"], g[sl], step, spec["args"]))
    full = unflat(torch.cat([n[0] for n in news]), params)
    return [full + [n[1], n[2]] for n in news]


def fsdp_e2e(xs, w, spec):
    full = torch.cat([x["flat_param_shard"].to(f64) for x in xs])
    din, dout = xs[0]["x"].shape[1], xs[0]["y"].shape[1]
    hid = (full.numel() - dout) // (din + 1 + dout)
    like = [torch.empty(s) for s in ((hid, din), (hid,), (dout, hid), (dout,))]
    params = unflat(full, like)
    g = flat(mean_grads(xs, params))
    part = full.numel() // w
    step = int(xs[0]["step"])
    out = []
    for r, x in enumerate(xs):
        sl = slice(r * part, (r + 1) * part)
        out.append(list(adam(x["flat_param_shard"], x["exp_avg_shard"], x["exp_avg_sq_shard"], g[sl], step,
                                   spec["args"], spec["args"]["weight_decay"])))
    return out


def adam_allgather(xs, w, spec):
    step = int(xs[0]["step"])
    new = [adam(x["master_shard"], x["exp_avg"], x["exp_avg_sq"], x["grad_shard"], step, spec["args"])[0]
           for x in xs]
    full = torch.cat(new)
    return [[full] for _ in xs]


def history(h, x):
    new = torch.roll(h, -1, 0)
    new[-1] = x.abs().max().float().to(torch.bfloat16)
    return new


def fp8_round_trip(x, h):
    # The quantization as specified: an fp32 scale and division, e4m3 round to nearest even.
    s = h.max().float().clamp_min(1e-12) / 448.0
    q = (x.float() / s).to(torch.float8_e4m3fn)
    return (q.to(f64) * s.to(f64)).to(x.dtype).to(f64)


def fp8_reducescatter(xs, w, spec):
    hists = [history(r["amax_history"], r["flat_grads"]) for r in xs]
    total = sum(fp8_round_trip(r["flat_grads"], h) for r, h in zip(xs, hists)) / w
    return [[chunk, h] for chunk, h in zip(total.chunk(w), hists)]


def fp8_allgather(xs, w, spec):
    hists = [history(r["amax_history"], r["flat_param_shard"]) for r in xs]
    full = torch.cat([fp8_round_trip(r["flat_param_shard"], h) for r, h in zip(xs, hists)])
    return [[full, h] for h in hists]


def n_tp_of(w):
    for p in range(2, w):
        if w % p == 0 and w // p >= 2:
            return p
    return 1


def tp_2d_mlp(xs, w, spec):
    n_tp = n_tp_of(w)
    n_fsdp = w // n_tp

    def full(name, row_of_fsdp):
        # Blocks (fsdp j, tp i) of rank j n_tp + i: W1, W2 split rows by j, columns by i;
        # W3 rows by i, columns by j.
        if row_of_fsdp:
            return torch.cat([torch.cat([xs[j * n_tp + i][name].to(f64) for i in range(n_tp)], 1)
                              for j in range(n_fsdp)], 0)
        return torch.cat([torch.cat([xs[j * n_tp + i][name].to(f64) for j in range(n_fsdp)], 1)
                          for i in range(n_tp)], 0)

    w1, w2, w3 = full("w1_shard", True), full("w2_shard", True), full("w3_shard", False)
    return [[(F.silu(r["x"].to(f64) @ w1) * (r["x"].to(f64) @ w2)) @ w3] for r in xs]


PROBLEMS = {
    "fsdp_clip_grad_norm": clip,
    "fsdp_clip_grad_norm_ep": clip_ep,
    "fsdp_zero1_adam_step": zero_adam,
    "fsdp_zero2_adam_step": zero_adam,
    "fsdp_step_e2e": fsdp_e2e,
    "fsdp_adam_unshard_allgather": adam_allgather,
    "fsdp_fp8_reducescatter_grads": fp8_reducescatter,
    "fsdp_fp8_allgather_params": fp8_allgather,
    "fsdp_tp_2d_mlp": tp_2d_mlp,
}

# Inputs that real systems replicate within a sub-group (equal on some ranks, not all).
REPLICATED = {"fsdp_tp_2d_mlp": {"x"}}
