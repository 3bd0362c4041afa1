"""Where ep_load_balancing_loss's reference spends its time at --size large.

Times each step of the reference (reference/ep_load_balancing_loss.cpp) alone on the large
preset's shapes (M x E bf16 router logits, top-k), the whole body before and after its
rewrite, and the other ATen ways to pick the top-k (a full sort of each row), beside one
read of the logits (the memory's pace). Prints a markdown table. Needs CUDA.
"""
import sys

import torch

from event_timing import print_steps


def main():
    m, e, k = (int(v) for v in (sys.argv[1:4] if len(sys.argv) > 3 else (196608, 128, 8)))
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.randn(m, e, device="cuda", generator=g) + torch.randn(e, device="cuda", generator=g)).bfloat16()
    p = torch.softmax(x, -1, dtype=torch.float32)
    sel = p.topk(k, -1, sorted=False).indices

    def before():  # the reference before: fp32 copy, softmax, sorted top-k, (K, E) counts by atomics
        q = x.float().softmax(-1)
        s = q.topk(k, -1).indices.t().contiguous()
        f = torch.zeros(k, e, device="cuda").scatter_add_(1, s, torch.ones(s.shape, device="cuda")) / m
        return (f * q.mean(0)).sum() * e

    def after():  # the reference now
        q = torch.softmax(x, -1, dtype=torch.float32)
        s = q.topk(k, -1, sorted=False).indices
        n = torch.zeros(m, e, device="cuda", dtype=torch.bool).scatter_(1, s, True).sum(0, dtype=torch.float32)
        return torch.dot(n, q.mean(0)) * (e / m)

    steps = [
        ("one read of the logits (sum)", lambda: x.sum()),
        ("softmax from bf16 into fp32 (now)", lambda: torch.softmax(x, -1, dtype=torch.float32)),
        ("fp32 copy, then softmax (before)", lambda: x.float().softmax(-1)),
        ("top-k, unsorted (now)", lambda: p.topk(k, -1, sorted=False)),
        ("top-k, sorted (before)", lambda: p.topk(k, -1)),
        ("full sort of each row, descending", lambda: p.sort(-1, descending=True)),
        ("counts: (K, E) scatter_add of ones (before)",
         lambda: torch.zeros(k, e, device="cuda").scatter_add_(1, sel.t().contiguous(), torch.ones(k, m, device="cuda"))),
        ("counts: mask scattered, summed down columns (now)",
         lambda: torch.zeros(m, e, device="cuda", dtype=torch.bool).scatter_(1, sel, True).sum(0, dtype=torch.float32)),
        ("P: mean of p over tokens", lambda: p.mean(0)),
        ("whole body before", before),
        ("whole body now", after),
    ]
    print(f"ep_load_balancing_loss steps, M={m} E={e} top_k={k}, {torch.cuda.get_device_name()}\n")
    print_steps(steps)
    print(f"\nloss before {before().item():.6f}, now {after().item():.6f}")


if __name__ == "__main__":
    main()
