"""Shared by tests/checks/dp.py and tests/checks/fsdp.py: the two-layer MLP's gradients
(torch autograd in fp64) and Adam in fp64, written from the problems' math."""
import torch
import torch.nn.functional as F

f64 = torch.float64


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
