"""The graph problems recomputed from every rank's saved inputs (see check_problem.py)."""
import torch

f64 = torch.float64


def _groups(t, sizes):
    return list(torch.split(t, [int(s) for s in sizes]))


def _exchange(sent, counts, w, backward=False):
    """sent[s] = rank s's list of groups in rotated order (group c for rank s + c). Returns
    per rank r the received groups in rotated order (group c from rank r + c), checking
    that the sizes agree with counts (counts[i][j] = rows j sends to i in the forward)."""
    out = []
    for r in range(w):
        got = []
        for c in range(w):
            s = (r + c) % w
            g = sent[s][(r - s) % w]
            want = counts[s][r] if backward else counts[r][s]
            assert g.shape[0] == int(want), "group sizes disagree with counts"
            got.append(g)
        out.append(got)
    return out


def feature_exchange(xs, w, spec):
    counts = xs[0]["counts"]
    sent = []
    for s, x in enumerate(xs):
        rows = x["features"][x["seed_inverse_ids"]]
        sent.append(_groups(rows, [counts[(s + c) % w][s] for c in range(w)]))
    return [[torch.cat(g).to(f64)] for g in _exchange(sent, counts, w)]


def feature_exchange_bwd(xs, w, spec):
    counts = xs[0]["counts"]
    # rank s's grad_output group c belongs to the rows rank s + c sent it in the forward
    sent = [_groups(x["grad_output"].to(f64), [counts[s][(s + c) % w] for c in range(w)]) for s, x in enumerate(xs)]
    out = []
    for r, got in enumerate(_exchange(sent, counts, w, backward=True)):
        rows = torch.cat(got)
        ids = xs[r]["seed_inverse_ids"]
        n = xs[r]["grad_output"].shape[0] // 2
        grad = torch.zeros(n, rows.shape[1], dtype=f64)
        grad.index_add_(0, ids, rows)
        out.append([grad])
    return out


PROBLEMS = {
    "gnn_feature_exchange_all2all": feature_exchange,
    "gnn_feature_exchange_all2all_bwd": feature_exchange_bwd,
}


def sparse_push(xs, w, spec):
    out = []
    for r in range(w):
        ids, vals = [], []
        for x in xs:
            mine = (x["idx"] % w) == r  # boolean masks keep the original order
            ids.append(x["idx"][mine])
            vals.append(x["value"][mine].to(f64))
        out.append([torch.cat(ids), torch.cat(vals)])
    return out


PROBLEMS["gnn_sparse_embedding_all2all"] = sparse_push


def fetch_projection(xs, w, spec):
    table = torch.cat([x["table"] for x in xs]).to(f64)  # contiguous shards, rank order
    return [[table[x["ids"]] @ x["proj"].to(f64)] for x in xs]


PROBLEMS["gnn_feature_fetch_projection"] = fetch_projection


def negative_ranks(xs, w, spec):
    ranks = []
    for x in xs:
        s = torch.sigmoid(torch.cat([x["pos"].to(f64).view(-1, 1), x["neg"].to(f64)], 1))
        # stable descending sort: the positive (column 0) comes first among equal scores
        order = torch.sort(s, dim=1, descending=True, stable=True).indices
        ranks.append((order == 0).nonzero()[:, 1] + 1)
    all_ranks = torch.cat(ranks)
    return [[all_ranks] for _ in xs]


PROBLEMS["gnn_negative_scoring_rank"] = negative_ranks


def neighbor_sampling(xs, w, spec):
    """Per node, in plain Python: the k in-edges with the smallest (key, position), in CSC
    order; first-appearance node lists; positions in node."""
    vl = xs[0]["colptr"].numel() - 1
    el = xs[0]["csc_row"].numel()
    parts = [(x["colptr"].tolist(), x["csc_row"].tolist(), x["edge_key"].tolist()) for x in xs]
    for _, _, key in parts:  # distinct keys: no sample depends on a tie-break
        assert sorted(key) == list(range(el)), "edge_key is not a permutation of 0 .. El - 1"
    fanouts = [int(spec["vars"]["F1"]), int(spec["vars"]["F2"])]

    def sample(v, k):
        r, j = divmod(v, vl)
        colptr, row, key = parts[r]
        cand = sorted(range(colptr[j], colptr[j + 1]), key=lambda e: (key[e], e))[:k]
        cand.sort()
        return [row[e] for e in cand], [r * el + e for e in cand]

    out = []
    for x in xs:
        node = x["seeds"].tolist()
        seen = set(node)
        frontier = list(node)
        rows, cols, edges = [], [], []
        for k in fanouts:
            nbr, dst, eid = [], [], []
            for v in frontier:
                n, e = sample(v, k)
                nbr += n
                dst += [v] * len(n)
                eid += e
            rows += nbr
            cols += dst
            edges += eid
            frontier = []
            for u in nbr:
                if u not in seen:
                    seen.add(u)
                    frontier.append(u)
            node += frontier
            if not frontier:
                break
        where = {v: i for i, v in enumerate(node)}
        t = lambda a: torch.tensor(a, dtype=torch.long)
        out.append([t(node), t([where[u] for u in rows]), t([where[v] for v in cols]), t(edges)])
    return out


PROBLEMS["gnn_neighbor_sampling"] = neighbor_sampling
