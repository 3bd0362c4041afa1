"""The Expert Parallel problems recomputed from every rank's saved inputs (see
check_problem.py), in fp64 (the fused MoE layers' expert GEMMs in fp32, see fused_moe).
Written from the problems' math, not from the C++: routing, counts and buffer layouts are
rebuilt per expert and source rank, and the inputs' own consistency (one-hot masks, split
lists that match the routing, the router margin, replicas' weights) is asserted."""
import torch
import torch.nn.functional as F

f64 = torch.float64


# ---- 24: load-balancing loss ---------------------------------------------------------------

def load_balancing_loss(xs, w, spec):
    losses = []
    for r in xs:
        z = r["gate_logits"].to(f64)
        m, e = z.shape
        k = spec_top_k(spec, e)
        p = z.softmax(-1)
        sel = p.topk(k, -1).indices
        f = F.one_hot(sel, e).to(f64).mean(0)  # (K, E)
        losses.append(e * (f * p.mean(0)).sum())
        # Which of the experts of equal p is a token's k-th choice is left open: the other
        # tie-break (highest index first) must move the loss far less than the tolerance.
        other = e - 1 - p.flip(-1).topk(k, -1).indices
        moved = abs(float(e * (F.one_hot(other, e).to(f64).mean(0) * p.mean(0)).sum() - losses[-1]))
        assert moved <= 0.1 * (1e-2 + 1e-2 * float(losses[-1])), f"a top-k tie-break moves the loss by {moved}"
    loss = sum(losses) / w
    return [[loss] for _ in xs]


def spec_top_k(spec, e):
    """top_k of the preset whose E matches (a --size override keeps top_k)."""
    for preset in spec["sizes"].values():
        if preset.get("E") == e:
            return preset["top_k"]
    return spec["sizes"]["default"]["top_k"]


# ---- 30: LoRA gradient all-reduce -----------------------------------------------------------

def lora_grad_allreduce(xs, w, spec):
    names = ["grad_fc1_1_lora_A", "grad_fc1_2_lora_A", "grad_fc2_lora_B"]
    sums = [sum(r[n].to(f64) for r in xs) for n in names]
    return [sums for _ in xs]


# ---- 26: token preprocess -------------------------------------------------------------------

def token_preprocess(xs, w, spec):
    counts = torch.stack([r["expert_mask"].to(f64).sum((1, 2)) for r in xs])  # (W, E)
    e = counts.shape[1]
    le = e // w
    out = []
    for q, r in enumerate(xs):
        # Each token's choices must be distinct experts (one-hot rows, no repeats).
        mask = r["expert_mask"]
        assert bool((mask.sum(0) == 1).all()) and bool((mask.sum(1) <= 1).all())
        mine = counts[:, q * le:(q + 1) * le]
        out.append([counts[q].view(w, le).sum(1).long(), mine.sum(1).long(), mine, mine.sum(0)])
    return out


# ---- 27: uneven all-to-all -------------------------------------------------------------------

def moe_all2all(xs, w, spec):
    out = []
    for q, r in enumerate(xs):
        assert int(r["input_split_sizes"].sum()) == r["local_tensor"].shape[0]
        parts = []
        for s, src in enumerate(xs):
            assert int(r["output_split_sizes"][s]) == int(src["input_split_sizes"][q])
            start = int(src["input_split_sizes"][:q].sum())
            parts.append(src["local_tensor"][start:start + int(src["input_split_sizes"][q])].to(f64))
        out.append([torch.cat(parts)])
    return out


# ---- 28/29: dispatch and combine, from the routing ---------------------------------------------

def tokens_of(routing_map, ex):
    """The tokens routed to expert ex, ascending, from an (E, M) map."""
    return torch.nonzero(routing_map[ex]).flatten()


def dispatch_permute(xs, w, spec):
    e, k, m = xs[0]["expert_mask"].shape
    le = e // w
    maps = []
    for r in xs:
        mask = r["expert_mask"]
        assert bool((mask.sum(0) == 1).all()) and bool((mask.sum(1) <= 1).all()), "not a top-k one-hot mask"
        maps.append(mask.sum(1) > 0)  # (E, M)
    counts = torch.stack([mp.sum(1) for mp in maps])  # (W, E): tokens of each source per expert
    out = []
    for q, r in enumerate(xs):
        # The split inputs must be the ones the routing gives.
        assert r["input_splits"].tolist() == counts[q].view(w, le).sum(1).tolist()
        mine = counts[:, q * le:(q + 1) * le]
        assert torch.equal(r["num_global_tokens_per_local_expert"].cpu(), mine)
        assert r["output_splits"].tolist() == mine.sum(1).tolist()
        parts = [xs[s]["hidden_states"][tokens_of(maps[s], q * le + j)] for j in range(le) for s in range(w)]
        grouped = torch.cat(parts).to(f64)
        mapping = torch.cat([tokens_of(maps[q], x) for x in range(e)])
        out.append([grouped, r["expert_mask"].to(f64).sum(1), mapping])
    return out


def combine_unpermute(xs, w, spec):
    m, k = xs[0]["selected_experts"].shape
    e = xs[0]["routing_map"].shape[0]
    n = xs[0]["expert_outputs"].shape[1]
    le = e // w
    sel = [r["selected_experts"] for r in xs]
    # rows[s][t, i]: the expert output for token t of source s and its i-th choice, taken
    # from the owner's buffer, laid out by local expert j, then source s, then token.
    rows = [torch.full((m, k, n), float("nan"), dtype=f64) for _ in xs]
    for q in range(w):
        buf = xs[q]["expert_outputs"].to(f64)
        pos = 0
        for j in range(le):
            for s in range(w):
                hit = sel[s] == q * le + j  # (M, K)
                toks = torch.nonzero(hit.any(1)).flatten()
                slot = hit[toks].to(torch.int8).argmax(1)
                rows[s][toks, slot] = buf[pos:pos + toks.numel()]
                pos += toks.numel()
        assert pos == int(xs[q]["num_global_tokens_per_local_expert"].sum())
    out = []
    for s, r in enumerate(xs):
        assert torch.equal(r["routing_map"].cpu(), F.one_hot(sel[s], e).sum(1).T.bool())
        out.append([(rows[s] * r["routing_weights"].to(f64).unsqueeze(-1)).sum(1)])
    return out


# ---- 31, 32, 49, 50, 51: fused MoE forward ---------------------------------------------------

MARGIN = 0.05  # the router margin the inputs guarantee


def fused_moe(xs, w, spec, top_k, ep_size, lora=False):
    """Every rank's MoE output. EP groups are blocks of ep_size consecutive ranks; in each,
    rank q (group index) owns experts [q Le, (q+1) Le) with its local weights. The router
    in fp64; the experts in fp32 (1e-6 of the outputs, against a tolerance of 6e-3: fp64
    GEMMs would cost the CI run most of its time)."""
    e = xs[0]["gate_weight"].shape[0]
    le = e // ep_size
    f32 = torch.float32
    gw, gb = xs[0]["gate_weight"].to(f64), xs[0]["gate_bias"].to(f64)

    def linear(v, rank, proj, lora_name, j):
        r = xs[rank]
        y = torch.addmm(r[proj + "_proj_bias"][j].to(f32), v, r[proj + "_proj_weight"][j].to(f32).T)
        if lora:
            a, b = r["lora_" + lora_name + "_A"][j].to(f32), r["lora_" + lora_name + "_B"][j].to(f32)
            y = y + (v @ a.T) @ b.T
        return y

    def expert(v, rank, j):
        h = F.silu(linear(v, rank, "gate", "gate", j)) * linear(v, rank, "up", "up", j)
        return linear(h, rank, "down", "down", j)

    routes = []
    for s, r in enumerate(xs):
        logits = r["hidden_states"].to(f64) @ gw.T + gb
        if top_k < e:
            top = logits.topk(top_k + 1, -1).values
            gap = top[:, top_k - 1] - top[:, top_k]
            assert float(gap.min()) >= MARGIN, f"rank {s}: a fragile router decision (gap {float(gap.min())})"
        routes.append(logits.softmax(-1).topk(top_k, -1))  # (weights, experts)
    ys = [torch.zeros(r["hidden_states"].shape, dtype=f64) for r in xs]
    for g in range(0, w, ep_size):
        group = range(g, g + ep_size)
        for ex in range(e):
            # Every token of the group routed to ex, through the owner's expert at once.
            hits = [routes[s][1] == ex for s in group]
            toks = [torch.nonzero(h.any(1)).flatten() for h in hits]
            x = torch.cat([xs[s]["hidden_states"][t] for s, t in zip(group, toks)]).to(f32)
            if x.shape[0] == 0:
                continue
            y = expert(x, g + ex // le, ex % le).to(f64)
            off = 0
            for s, t, h in zip(group, toks, hits):
                wt = (routes[s][0] * h).sum(1)[t]
                ys[s][t] += wt.unsqueeze(1) * y[off:off + t.numel()]
                off += t.numel()
    return [[y] for y in ys]


def moe_narrow(xs, w, spec):
    e = xs[0]["gate_weight"].shape[0]
    assert e == max([d for d in range(1, w // 2 + 1) if w % d == 0] or [1]), "E is not the narrow EP size"
    # The replicas of an expert (ranks r and r + E) hold the same weights.
    for r in range(e, w):
        for name in ["gate_proj_weight", "up_proj_weight", "down_proj_bias"]:
            assert torch.equal(xs[r][name], xs[r - e][name]), f"{name} differs between replicas"
    return fused_moe(xs, w, spec, min(2, e), e)


PROBLEMS = {
    "ep_fused_moe_fwd": lambda xs, w, spec: fused_moe(xs, w, spec, spec_top_k(spec, xs[0]["gate_weight"].shape[0]), w),
    "ep_fused_moe_fwd_lora": lambda xs, w, spec: fused_moe(xs, w, spec, spec_top_k(spec, xs[0]["gate_weight"].shape[0]), w,
                                                           lora=True),
    "ep_moe_balanced": lambda xs, w, spec: fused_moe(xs, w, spec, 2, w),
    "ep_moe_wide": lambda xs, w, spec: fused_moe(xs, w, spec, 2, w),
    "ep_moe_narrow": lambda xs, w, spec: moe_narrow(xs, w, spec),
    "ep_moe_combine_unpermute": combine_unpermute,
    "ep_moe_dispatch_permute": dispatch_permute,
    "ep_moe_all2all": moe_all2all,
    "ep_moe_token_preprocess": token_preprocess,
    "ep_moe_lora_grad_allreduce": lora_grad_allreduce,
    "ep_load_balancing_loss": load_balancing_loss,
}
