"""The Tensor Parallel problems recomputed in fp64 from every rank's saved inputs (see harness.py)."""
import math
import torch
import torch.nn.functional as F

f64 = torch.float64


def cat_cols(parts):
    return torch.cat(parts, dim=-1)


# ---- the problems, recomputed in fp64 ------------------------------------------------------
# Each takes the list of every rank's inputs (dicts of tensors), W and the spec, and returns
# a list (per rank) of lists (per output) of fp64 tensors.

def ag_gemm_t(xs, w, spec):
    at_full = torch.cat([x["a_t"].to(f64) for x in xs])  # (K, M)
    return [[at_full.T @ x["b"].to(f64)] for x in xs]


def ag_gemm(xs, w, spec):
    a = cat_cols([x["a"].to(f64) for x in xs])
    return [[a @ x["b"].to(f64)] for x in xs]


def gemm_ar(xs, w, spec):
    c = sum(x["a"].to(f64) @ x["b"].to(f64) for x in xs)
    return [[c] for _ in xs]


def gemm_ag(xs, w, spec):
    c = cat_cols([x["a"].to(f64) @ x["b"].to(f64) for x in xs])
    return [[c] for _ in xs]


def gemm_rs(xs, w, spec):
    c = sum(x["a"].to(f64) @ x["b"].to(f64) for x in xs)
    return [[part] for part in c.chunk(w)]


def ag_mlp_rs(xs, w, spec):
    x = cat_cols([r["x"].to(f64) for r in xs])
    total = sum(F.silu(x @ r["w1"].to(f64)) @ r["w2"].to(f64) for r in xs)
    return [[part] for part in total.chunk(w)]


def rmsnorm_ar(xs, w, spec):
    eps = spec["args"]["eps"]
    ss = sum(r["hidden"].to(f64).pow(2).sum(-1, keepdim=True) for r in xs)
    n = xs[0]["hidden"].shape[-1] * w
    return [[r["weight"].to(f64) * r["hidden"].to(f64) / torch.sqrt(ss / n + eps)] for r in xs]


def fp8_quant_ag(xs, w, spec):
    ys, ss = [], []
    for r in xs:
        x = r["x"].to(f64)
        xb = x.view(x.shape[0], -1, 128)
        s = (xb.abs().amax(-1) / 448).float()  # correctly rounded, as the fp32 division is
        safe = torch.where(s == 0, torch.ones_like(s), s).to(f64)
        ys.append((xb / safe.unsqueeze(-1)).view_as(x).to(torch.float8_e4m3fn).to(f64))
        ss.append(s.to(f64))
    out = [torch.cat(ys), torch.cat(ss)]
    return [out for _ in xs]


def fp8_dequant_a2a(xs, w, spec):
    deq = []
    for r in xs:
        y, s = r["y"].to(f64), r["s"].to(f64)
        deq.append((y.view(w, -1, 128) * s.unsqueeze(-1)).view_as(y))
    return [[torch.stack([deq[j][rank] for j in range(w)])] for rank in range(w)]


def rs_rmsnorm(xs, w, spec):
    eps = spec["args"]["eps"]
    gamma = xs[0]["gamma"].to(f64)
    h = gamma.numel()
    total = sum(r["x"].to(f64) for r in xs) / w
    out = []
    for chunk in total.chunk(w):
        v = chunk.view(-1, h)
        out.append([v / torch.sqrt(v.pow(2).mean(-1, keepdim=True) + eps) * gamma])
    return out


def lmhead(xs, w, spec):
    logits = cat_cols([r["h"].to(f64) @ r["weight"].to(f64).T + r["bias"].to(f64) for r in xs])
    return [[logits] for _ in xs]


def vocab_ce(xs, w, spec):
    z = cat_cols([r["logits"].to(f64) for r in xs])
    t = xs[0]["target"]
    loss = torch.logsumexp(z, -1) - z.gather(-1, t.unsqueeze(-1)).squeeze(-1)
    return [[loss] for _ in xs]


def conv3d_ar(xs, w, spec):
    # fp32 (fp64 convolutions are too slow here); its error is ~1e-6 of |y|.
    x = torch.cat([r["x"].float() for r in xs], dim=1)
    wt = torch.cat([r["weight"].float() for r in xs], dim=1)
    y = F.conv3d(x, wt).to(f64) + xs[0]["bias"].to(f64).view(1, -1, 1, 1, 1)
    return [[y] for _ in xs]


def filter_keep(z, k, p):
    """Keep mask of the top-k/top-p filter, by thresholds (not the reference's scatter)."""
    keep = z >= z.topk(k, -1).values[..., -1:]
    masked = z.masked_fill(~keep, -math.inf)
    asc, idx = masked.sort(-1)
    cum = asc.softmax(-1).cumsum(-1)
    stay = cum > 1 - p
    stay[..., -1] = True
    keep_p = torch.zeros_like(stay).scatter(-1, idx, stay)
    return keep & keep_p


def logprob_full(xs, spec):
    z = cat_cols([r["logits"].to(f64) for r in xs])  # (B, S, V)
    keep = filter_keep(z, int(spec["vars"]["top_k"]), spec["args"]["top_p"])
    return z, keep


def logprob(xs, w, spec):
    z, keep = logprob_full(xs, spec)
    lp = z.masked_fill(~keep, -math.inf).log_softmax(-1)
    t = xs[0]["target"].unsqueeze(-1)
    assert keep.gather(-1, t).all(), "a target token is filtered out"
    out = lp.gather(-1, t).squeeze(-1)
    return [[out] for _ in xs]


def logprob_bwd(xs, w, spec):
    z, keep = logprob_full(xs, spec)
    probs = z.masked_fill(~keep, -math.inf).softmax(-1)
    t = xs[0]["target"].unsqueeze(-1)
    onehot = torch.zeros_like(probs).scatter(-1, t, 1.0)
    g = (onehot - probs) * xs[0]["grad_output"].to(f64).unsqueeze(-1) * keep
    return [[part] for part in g.chunk(w, dim=-1)]


MUON = {
    "simple": [(3.4445, -4.7750, 2.0315)],
    "quintic": [(4.0848, -6.8946, 2.9270), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037),
                (2.8769, -3.1427, 1.2046), (2.8366, -3.0525, 1.2012)],
}


def muon(xs, w, spec):
    coeffs = MUON[spec["args"]["coefficient_type"]]
    steps = int(spec["vars"]["steps"])
    x = cat_cols([r["x"].to(f64) for r in xs])
    x = x / x.norm().clamp_min(1e-7)
    for i in range(steps):
        a, b, c = coeffs[i % len(coeffs)]
        g = x @ x.T
        x = a * x + (b * g + c * g @ g) @ x
    return [[part] for part in x.chunk(w, dim=1)]


PROBLEMS = {
    "tp_allgather_gemm_transposed": ag_gemm_t,
    "tp_allgather_gemm": ag_gemm,
    "tp_gemm_allreduce": gemm_ar,
    "tp_gemm_allgather": gemm_ag,
    "tp_allgather_mlp_reducescatter": ag_mlp_rs,
    "tp_gemm_reducescatter": gemm_rs,
    "tp_rmsnorm_allreduce": rmsnorm_ar,
    "tp_fp8_block_quant_allgather": fp8_quant_ag,
    "tp_fp8_block_dequant_alltoall": fp8_dequant_a2a,
    "tp_reducescatter_rmsnorm": rs_rmsnorm,
    "tp_lmhead_gemv_allgather": lmhead,
    "tp_vocab_parallel_cross_entropy": vocab_ce,
    "tp_conv3d_rowparallel_allreduce": conv3d_ar,
    "tp_vocab_parallel_logprob_topk": logprob,
    "tp_vocab_parallel_logprob_topk_chunked": logprob,
    "tp_vocab_parallel_logprob_topk_chunked_bwd": logprob_bwd,
    "tp_muon_newton_schulz": muon,
}
