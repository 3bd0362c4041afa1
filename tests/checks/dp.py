"""The Data Parallel problems recomputed in fp64 from every rank's saved inputs (see
tests/check_problem.py)."""
import math
import torch
import torch.nn.functional as F

from checks.fsdp import adam, mean_grads

f64 = torch.float64
PARAMS = ["w1", "b1", "w2", "b2"]


def layernorm_bwd(xs, w, spec):
    d_gamma = sum((r["dy"].to(f64) * r["x_hat"].to(f64)).sum(0) for r in xs)
    d_beta = sum(r["dy"].to(f64).sum(0) for r in xs)
    return [[d_gamma, d_beta] for _ in xs]


def grad_acc_loss(xs, w, spec):
    loss_sum = sum(r["loss"].to(f64) * r["local_valid_tokens"].to(f64) for r in xs)
    out = []
    for r in xs:
        local, total = r["local_valid_tokens"].to(f64), r["global_valid_tokens"].to(f64)
        grad = r["grad_normalized_loss"].to(f64) * local / total + r["grad_loss_sum"].to(f64) * local
        out.append([loss_sum / total, loss_sum, grad])
    return out


def ddp_adam(xs, w, spec):
    root = xs[0]
    params = [root[n] for n in PARAMS]
    grads = mean_grads(xs, params)
    step = int(root["step"])
    new = [adam(root[n], root["exp_avg_" + n], root["exp_avg_sq_" + n], g, step, spec["args"])
           for n, g in zip(PARAMS, grads)]
    out = [t[0] for t in new] + [t[1] for t in new] + [t[2] for t in new]
    return [out for _ in xs]


def int8_quant_allreduce(xs, w, spec):
    block = int(spec["vars"]["block"])
    deq = []
    for r in xs:
        g = r["flat_grad"]
        n = g.numel()
        x = F.pad(g.float(), (0, (-n) % block)).view(-1, block)
        # The quantization as specified: fp32 scales and an fp32 division, round half to even.
        s = x.abs().amax(1, keepdim=True).clamp_min(1e-8) / 127.0
        q = (x / s).round().clamp(-127, 127)
        deq.append((q.to(f64) * s.to(f64)).view(-1)[:n])
    mean = sum(deq) / w
    return [[mean] for _ in xs]


def siglip(xs, w, spec):
    scale, bias = spec["args"]["logit_scale"], spec["args"]["logit_bias"]
    out = []
    for r, x in enumerate(xs):
        img = x["image_features"].to(f64)
        total = torch.zeros((), dtype=f64)
        for s, y in enumerate(xs):
            logits = scale * img @ y["text_features"].to(f64).T + bias
            labels = -torch.ones_like(logits)
            if s == r:
                labels.fill_diagonal_(1.0)
            total = total - F.logsigmoid(labels * logits).sum()
        out.append([total / img.shape[0]])
    return out


def sinkhorn(xs, w, spec):
    temp, iters = spec["args"]["teacher_temp"], int(spec["vars"]["n_iterations"])
    qs = [torch.exp(r["teacher_output"].to(f64) / temp).T for r in xs]  # (K, Bl) each
    total_batch = sum(float(r["n_masked"].sum()) for r in xs)
    mass = sum(q.sum() for q in qs)
    qs = [q / mass for q in qs]
    k = qs[0].shape[0]
    for _ in range(iters):
        rows = sum(q.sum(1, keepdim=True) for q in qs)
        qs = [q / rows / k for q in qs]
        qs = [q / q.sum(0, keepdim=True) / total_batch for q in qs]
    return [[(q * total_batch).T] for q in qs]


def knn(xs, w, spec):
    train = torch.cat([r["train_features_T"].to(f64) for r in xs], 1)  # global index order
    labels = torch.cat([r["train_labels"].view(-1) for r in xs])
    k = min(200, xs[0]["train_features_T"].shape[1])
    out = []
    for r in xs:
        sims = r["test_features"].to(f64) @ train  # exact: grid values
        values, idx = sims.sort(dim=1, descending=True, stable=True)  # ties: smaller index first
        dt = r["test_features"].dtype
        out.append([values[:, :k].to(dt).to(f64), labels[idx[:, :k]]])
    return out


def importance_sampling(xs, w, spec):
    ignore = spec["args"]["ignore_index"]
    per = []
    for r in xs:
        logits = r["hidden_states"].to(f64) @ r["weight"].to(f64).T
        labels = r["labels"]
        valid = labels != ignore
        ce = torch.where(valid, logits.logsumexp(1) - logits.gather(1, labels.clamp_min(0)[:, None])[:, 0], 0.0)
        delta = torch.where(valid, -ce - r["old_logprobs"].to(f64), 0.0).clamp(-20, 20)
        ratio = delta.exp()
        pg = torch.where(valid, -(ratio * r["advantages"].to(f64)), 0.0)
        per.append((valid, ce, delta, ratio, pg))
    n = max(1.0, float(sum(p[0].sum() for p in per)))
    loss = sum(p[4].sum() for p in per) / n
    ratios = torch.cat([p[3][p[0]] for p in per])
    metrics = torch.stack([ratios.sum() / n, ratios.min(), ratios.max(),
                           sum((p[3] - p[2] - 1)[p[0]].sum() for p in per) / n,
                           sum(p[1].sum() for p in per) / n])
    return [[loss, -p[1], p[4], metrics] for p in per]


def sam3(xs, w, spec):
    counts = [int(c) for c in xs[0]["num_obj_per_gpu"]]
    masks = torch.cat([r["masks"][:c].float() for r, c in zip(xs, counts)])
    scores = torch.cat([r["scores"][:c].float() for r, c in zip(xs, counts)])
    n = masks.shape[0]
    last = xs[0]["last_occluded"][:n]
    b = (masks > 0).flatten(1).to(f64)
    inter = b @ b.T  # exact integers
    union = b.sum(1)[:, None] + b.sum(1)[None, :] - inter
    # IoU as specified: an fp32 division compared with fp32(threshold).
    iou = inter.float() / union.clamp_min(1).float()
    overlap = (iou >= spec["args"]["iou_threshold"]) & ~torch.eye(n, dtype=torch.bool)
    later = last[:, None] < last[None, :] if spec["args"]["reverse"] else last[:, None] > last[None, :]
    suppress = (overlap & later & (last[None, :] > -1)).any(1)
    out = masks.to(f64).clone()
    out[suppress] = -10.0
    return [[out, scores.to(f64), suppress] for _ in xs]


PROBLEMS = {
    "dp_layernorm_bwd_allreduce": layernorm_bwd,
    "dp_grad_acc_loss_allreduce": grad_acc_loss,
    "dp_ddp_adam_step": ddp_adam,
    "dp_int8_quant_grad_allreduce": int8_quant_allreduce,
    "dp_siglip_contrastive_loss": siglip,
    "dp_dinov2_sinkhorn_knopp": sinkhorn,
    "dp_dinov2_knn": knn,
    "dp_importance_sampling_loss": importance_sampling,
    "dp_sam3_iou_suppression": sam3,
}
