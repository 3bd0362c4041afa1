"""The Context Parallel problems recomputed in fp64 from every rank's saved inputs (see
check_problem.py). Written from each problem's math (full-sequence attention, naive
token-by-token recurrences, direct convolutions), not from the references' parallel forms."""
import math

import torch
import torch.nn.functional as F

f64 = torch.float64


def zigzag(t, w, r, dim=1):
    """Rank r's rows of a full sequence under zig-zag sharding: chunks r and 2W-1-r of 2W."""
    c = t.shape[dim] // (2 * w)
    return torch.cat([t.narrow(dim, r * c, c), t.narrow(dim, (2 * w - 1 - r) * c, c)], dim=dim)


def unzigzag(parts, dim=1):
    """The full sequence from every rank's zig-zag shard."""
    w = len(parts)
    c = parts[0].shape[dim] // 2
    chunks = [None] * (2 * w)
    for r, p in enumerate(parts):
        chunks[r] = p.narrow(dim, 0, c)
        chunks[2 * w - 1 - r] = p.narrow(dim, c, c)
    return torch.cat(chunks, dim=dim)


def attention(q, k, v, causal, scale=None):
    """softmax(q k^T / sqrt(D)) v over (B, T, H, D) tensors, in fp64: one head and a block of
    queries at a time, so the scores of a long sequence (48k tokens) stay ~256 MiB."""
    scale = scale or q.shape[-1] ** -0.5
    b, tq, h, _ = q.shape
    tk = k.shape[1]
    out = torch.empty(b, tq, h, v.shape[-1], dtype=torch.promote_types(q.dtype, v.dtype), device=q.device)
    block = max(1, (1 << 25) // (b * tk))
    for hh in range(h):
        for s in range(0, tq, block):
            e = min(tq, s + block)
            sc = torch.einsum("bqd,bkd->bqk", q[:, s:e, hh], k[:, :, hh]) * scale
            if causal:  # query i sees keys 0..i
                qi, ki = torch.arange(s, e, device=q.device), torch.arange(tk, device=q.device)
                sc = sc.masked_fill(qi.unsqueeze(1) < ki.unsqueeze(0), -math.inf)
            out[:, s:e, hh] = torch.einsum("bqk,bkd->bqd", sc.softmax(-1), v[:, :, hh])
    return out


# ---- the problems ------------------------------------------------------------------------

def rope(xs, w, spec):
    def one(x, c, s):
        h = x.shape[-1] // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return x * c.unsqueeze(2) + rot * s.unsqueeze(2)
    q = torch.cat([one(r["q_local"].to(f64), r["cos_local"].to(f64), r["sin_local"].to(f64)) for r in xs], 1)
    k = torch.cat([one(r["k_local"].to(f64), r["cos_local"].to(f64), r["sin_local"].to(f64)) for r in xs], 1)
    # the tables must be the rotary ones of consecutive positions
    d = xs[0]["cos_local"].shape[-1]
    cos = torch.cat([r["cos_local"].to(f64) for r in xs], 1)
    pos0 = torch.atan2(torch.cat([r["sin_local"].to(f64) for r in xs], 1)[..., 0], cos[..., 0])
    step = torch.remainder(pos0[:, 1:] - pos0[:, :-1] - 1 + math.pi, 2 * math.pi) - math.pi
    assert step.abs().max() < 0.05, "cos/sin are not rotary tables of consecutive positions"
    assert d % 2 == 0
    return [[q, k] for _ in xs]


def ulysses_attention(xs, w, spec):
    h = torch.cat([r["hidden_states"].to(f64) for r in xs], 1)  # (B, T, Hd), rank order
    wq = xs[0]["w_qkv"].to(f64)  # (3, NH, D, Hd)
    qkv = torch.einsum("bte,cnde->btcnd", h, wq)
    ctx = attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], causal=False)
    out = ctx.flatten(2) @ xs[0]["w_o"].to(f64).T
    return [[part] for part in out.chunk(w, dim=1)]


def ring_attention(xs, w, spec):
    q, k, v = (unzigzag([r[n].to(f64) for r in xs]) for n in ("q", "k", "v"))
    out = attention(q, k, v, causal=True)
    return [[zigzag(out, w, r)] for r in range(w)]


def attention_block(x, w_qkv, w_o):
    """x (B, T, Hd), w_qkv (3, NH, D, Hd), w_o (Hd, NH*D): causal attention, both projections."""
    qkv = torch.einsum("bte,cnde->btcnd", x, w_qkv)
    return attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], causal=True).flatten(2) @ w_o.T


def ring_attention_tp(xs, w, spec):
    tp = min(2, w)
    cp = w // tp
    # hidden: one TP rank of each CP shard; weights: one CP rank of each TP shard
    h = unzigzag([xs[c * tp]["hidden_states"].to(f64) for c in range(cp)])
    w_qkv = torch.cat([xs[t]["w_qkv"].to(f64) for t in range(tp)], dim=1)
    w_o = torch.cat([xs[t]["w_o"].to(f64) for t in range(tp)], dim=1)
    out = attention_block(h, w_qkv, w_o)
    return [[zigzag(out, cp, r // tp)] for r in range(w)]


def ring_attention_pp(xs, w, spec):
    pp = min(2, w)
    cp = w // pp
    x = unzigzag([xs[c]["hidden_states"].to(f64) for c in range(cp)])
    outs = []
    for p in range(pp):
        x = attention_block(x, xs[p * cp]["w_qkv"].to(f64), xs[p * cp]["w_o"].to(f64))
        outs.append(x)
    return [[zigzag(outs[r // cp], cp, r % cp)] for r in range(w)]


def ring_attention_bwd_dp(xs, w, spec):
    dp = min(2, w)
    cp = w // dp
    grads = []
    for d in range(dp):
        blk = xs[d * cp:(d + 1) * cp]
        q, k, v, do, o = (torch.cat([r[n].to(f64) for r in blk], 1) for n in ("q", "k", "v", "dout", "out"))
        lse = torch.cat([r["softmax_lse"].to(f64) for r in blk], 2)  # (B, H, T)
        scale = q.shape[-1] ** -0.5
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
        # the given forward must be the true one over the whole sequence
        assert (lse - s.logsumexp(-1)).abs().max() < 1e-3, "softmax_lse is not the forward's"
        assert (o - torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), v)).abs().max() < 0.05, "out is not the forward's"
        p = (s - lse.unsqueeze(-1)).exp()
        delta = (do * o).sum(-1).transpose(1, 2).unsqueeze(-1)  # (B, H, T, 1)
        ds = p * (torch.einsum("bqhd,bkhd->bhqk", do, v) - delta)
        dq = torch.einsum("bhqk,bkhd->bqhd", ds, k) * scale
        dk = torch.einsum("bhqk,bqhd->bkhd", ds, q) * scale
        dv = torch.einsum("bhqk,bqhd->bkhd", p, do)
        grads.append([g.chunk(cp, dim=1) for g in (dq, dk, dv)])
    return [[sum(grads[d][i][r % cp] for d in range(dp)) / dp for i in range(3)] for r in range(w)]


def hyena_conv1d(xs, w, spec):
    x = unzigzag([r["x"].to(f64) for r in xs], dim=2)  # (B, C, 2*W*L)
    wt = xs[0]["weight"].to(f64)  # (C, 1, K)
    k = wt.shape[-1]
    # causal depthwise convolution, written as a sum of shifted copies
    xp = F.pad(x, (k - 1, 0))
    y = sum(wt[:, 0, j].view(1, -1, 1) * xp[..., j:j + x.shape[-1]] for j in range(k))
    return [[zigzag(y, w, r, dim=2)] for r in range(w)]


def hyena_fftconv(xs, w, spec):
    x1, x2, v = (unzigzag([r[n].to(f64) for r in xs], dim=2) for n in ("x1", "x2", "v"))  # (B, C, Ls)
    h, bias = xs[0]["h"].to(f64), xs[0]["conv_bias"].to(f64)
    u = x2 * v
    ls = u.shape[-1]
    n = 2 * ls
    # the circular convolution of length n (u zero-padded to n, taps s < min(n, Lh)):
    # y[t] = sum_s h[s] u[(t - s) mod n], as a direct grouped convolution over u extended
    # periodically to the left
    taps = min(n, h.shape[1])
    un = F.pad(u, (0, n - ls))
    ext = un[..., (torch.arange(ls + taps - 1) - (taps - 1)) % n]
    y = F.conv1d(ext, h[:, :taps].flip(-1).unsqueeze(1), groups=h.shape[0])  # (B, C, ls)
    z = x1 * (y + u * bias.view(1, -1, 1))
    return [[zigzag(z, w, r, dim=2).transpose(1, 2)] for r in range(w)]


def conv2d_halo(xs, w, spec):
    groups = 2 if w >= 4 and w % 2 == 0 else 1
    g = w // groups
    wt, b = xs[0]["weight"].to(f64), xs[0]["bias"].to(f64)
    out = []
    for c in range(groups):
        img = torch.cat([xs[c * g + i]["x"].to(f64) for i in range(g)], dim=2)
        y = F.conv2d(img, wt, b, padding=1)
        out += [[part] for part in y.chunk(g, dim=2)]
    return out


def delta_rule(q, k, v, a, beta):
    """The token-by-token recurrence, fp64: rows n, q k (N, T, DK), v (N, T, DV), decay a
    (N, T, DK) or (N, T, 1), beta (N, T)."""
    n, t, dk = q.shape
    state = torch.zeros(n, dk, v.shape[-1], dtype=f64)
    out = []
    for i in range(t):
        state = a[:, i].unsqueeze(-1) * state
        u = (v[:, i] - torch.einsum("nk,nkv->nv", k[:, i], state)) * beta[:, i].unsqueeze(-1)
        state = state + k[:, i].unsqueeze(-1) * u.unsqueeze(1)
        out.append(torch.einsum("nk,nkv->nv", q[:, i], state))
    return torch.stack(out, 1)


def rows(x):
    """(B, T, H, D) -> (B*H, T, D)"""
    return x.transpose(1, 2).reshape(-1, x.shape[1], x.shape[3])


def kda(xs, w, spec):
    tp = 2 if w >= 4 and w % 2 == 0 else 1
    cp = w // tp
    lb = spec["args"]["lower_bound"]
    o = []  # per TP shard: (1, T, NH, DV) outputs of its heads
    for t in range(tp):
        grp = [xs[c * tp + t] for c in range(cp)]
        q, k, v, g, beta = (torch.cat([r[n].to(f64) for r in grp], 1) for n in ("q", "k", "v", "g", "beta"))
        nh, dk = q.shape[2], q.shape[3]
        a_log, dt_bias = grp[0]["a_log"].to(f64), grp[0]["dt_bias"].to(f64).view(nh, dk)
        decay = torch.exp(lb * torch.sigmoid(a_log.exp().view(1, 1, nh, 1) * (g + dt_bias)))
        qn = F.normalize(q, dim=-1) * dk ** -0.5
        kn = F.normalize(k, dim=-1)
        out = delta_rule(rows(qn), rows(kn), rows(v), rows(decay), beta.sigmoid().transpose(1, 2).reshape(nh, -1))
        o.append(out.view(1, nh, -1, v.shape[-1]).transpose(1, 2))
    s = xs[0]["q"].shape[1]
    res = []
    for r in range(w):
        c = r // tp
        y = sum(o[t][:, c * s:(c + 1) * s].flatten(2) @ xs[c * tp + t]["w_o"].to(f64) for t in range(tp))
        res.append([y])
    return res


def gated_deltanet(xs, w, spec):
    q, k, v, gate, beta = (torch.cat([r[n].to(f64) for r in xs], 1) for n in ("q", "k", "v", "gate", "beta"))
    hh, dk = q.shape[2], q.shape[3]
    a_log = torch.cat([r["a_log"].to(f64) for r in xs])  # per head, rank order
    dt_bias = torch.cat([r["dt_bias"].to(f64) for r in xs])
    decay = torch.exp(-a_log.exp() * F.softplus(gate + dt_bias))  # (1, T, Hh)
    qn = F.normalize(q, dim=-1, eps=1e-6) * dk ** -0.5
    kn = F.normalize(k, dim=-1, eps=1e-6)
    out = delta_rule(rows(qn), rows(kn), rows(v), decay.transpose(1, 2).reshape(hh, -1, 1),
                     beta.transpose(1, 2).reshape(hh, -1))
    o = out.view(1, hh, -1, v.shape[-1]).transpose(1, 2)  # (1, T, Hh, DV)
    return [[part] for part in o.chunk(w, dim=1)]


def magi_cso(xs, w, spec):
    rr = xs[0]["k_ranges"].shape[0]
    spb = xs[0]["query"].shape[0] // rr
    hq, d = xs[0]["query"].shape[1:]
    hkv = xs[0]["key_value"].shape[1]
    # the last range's window always ends at the end of the sequence, R * chunk
    chunk = int(xs[0]["k_ranges"][rr - 1][1]) // rr
    assert -(-chunk // w) == spb, "k_ranges does not end at R * chunk"
    q = torch.stack([x["query"].to(f64).view(rr, spb, hq, d) for x in xs], 1).reshape(rr, w * spb, hq, d)
    kv = torch.stack([x["key_value"].to(f64).view(rr, spb, hkv, 2 * d) for x in xs], 1).reshape(rr, w * spb, hkv, 2 * d)
    # fp64 over the default's 48k tokens takes minutes on a CPU: on a GPU where there is one
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    q = q.to(dev)
    keys = kv[:, :chunk].reshape(rr * chunk, hkv, 2 * d).to(dev)
    out = torch.empty_like(q)
    for i in range(rr):
        s, e = (int(v) for v in xs[0]["k_ranges"][i])
        k = keys[s:e, :, :d].repeat_interleave(hq // hkv, 1)
        v = keys[s:e, :, d:].repeat_interleave(hq // hkv, 1)
        out[i] = attention(q[i].unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), causal=False)[0]
    out = out.cpu().view(rr, w, spb, hq, d)
    return [[out[:, r].reshape(rr * spb, hq, d)] for r in range(w)]


def magi_vae(xs, w, spec):
    """The original's algorithm on one rank (no parallelism): tiles, decode (rounded to the
    video's dt), blends position by position, crops, assembly. The tile geometry is the
    default preset's (tests replace only T, H, Wd, which z's shape gives)."""
    z = xs[0]["z"]
    sz = spec["sizes"]["default"]
    lt, th, tw, stt, sth, stw, tu, su = (sz[k] for k in ("Lt", "Th", "Tw", "stt", "sth", "stw", "tu", "su"))
    _, _, t_, h_, w_ = z.shape
    nt, nh, nw = -(-t_ // stt), -(-h_ // sth), -(-w_ // stw)
    dec = {}
    for a in range(nt):
        for b in range(nh):
            for c in range(nw):
                tile = z[:, :3, a * stt:a * stt + lt, b * sth:b * sth + th, c * stw:c * stw + tw].to(f64)
                up = F.interpolate(tile, scale_factor=(tu, su, su), mode="trilinear", align_corners=False)
                dec[a, b, c] = up.to(z.dtype).to(f64)
    bt, bh, bw = (lt - stt) * tu, (th - sth) * su, (tw - stw) * su
    video = torch.zeros(1, 3, t_ * tu, h_ * su, w_ * su, dtype=f64)
    for (a, b, c), d in dec.items():
        cur = d.clone()
        for dim, prev, ext in ((2, dec.get((a - 1, b, c)), bt), (3, dec.get((a, b - 1, c)), bh),
                               (4, dec.get((a, b, c - 1)), bw)):
            if prev is None:
                continue
            e = min(prev.shape[dim], cur.shape[dim], ext)
            for j in range(e):
                cur.select(dim, j).copy_(prev.select(dim, prev.shape[dim] - e + j) * (1 - j / e) + cur.select(dim, j) * (j / e))
        cur = cur[:, :, :stt * tu, :sth * su, :stw * su]
        video[:, :, a * stt * tu:a * stt * tu + cur.shape[2], b * sth * su:b * sth * su + cur.shape[3],
              c * stw * su:c * stw * su + cur.shape[4]] = cur
    return [[video] for _ in xs]


PROBLEMS = {
    "cp_rope_allgather": rope,
    "cp_magi_tile_vae_decode": magi_vae,
    "cp_magi_cso_attention": magi_cso,
    "cp_kda_attention_cp_tp": kda,
    "cp_gated_deltanet_all2all": gated_deltanet,
    "cp_hyena_conv1d_halo": hyena_conv1d,
    "cp_hyena_fftconv_all2all": hyena_fftconv,
    "cp_conv2d_halo_exchange": conv2d_halo,
    "cp_ulysses_attention": ulysses_attention,
    "cp_ring_attention": ring_attention,
    "cp_ring_attention_tp": ring_attention_tp,
    "cp_ring_attention_bwd_dp": ring_attention_bwd_dp,
}


def tp_cp_groups(w, spec):
    tp = min(2, w)
    # hidden replicated in a TP group (same CP index), weights in a CP group (same TP index)
    return {"hidden_states": [r // tp for r in range(w)], "w_qkv": [r % tp for r in range(w)],
            "w_o": [r % tp for r in range(w)]}


# Inputs replicated within sub-groups of ranks: {problem: fn(w, spec) -> {input: group per rank}}.
def kda_groups(w, spec):
    tp = 2 if w >= 4 and w % 2 == 0 else 1
    # per-head parameters and w_o rows belong to a TP shard, replicated over its CP group
    return {n: [r % tp for r in range(w)] for n in ("a_log", "dt_bias", "w_o")}


REPLICATED = {
    "cp_ring_attention_tp": tp_cp_groups,
    "cp_kda_attention_cp_tp": kda_groups,
}
