"""Where ep_moe_combine_unpermute's reference spends its time at --size large.

The reference (reference/ep_moe_combine_unpermute.cpp) regroups the top_k*M expert rows by
source rank (an index_copy), exchanges them (a copy at W = 1) and sums each token's rows
weighted by its routing probabilities in one embedding_bag (fp32 products and sum, rounded
once). This times those steps alone on the large preset's shapes (M = 4096 tokens, top-8 of
256 experts, rows 7168 wide, bf16), the widen-weight-index_add form it replaced, and one
read and one copy of the rows (the memory's pace). Prints a markdown table. Needs CUDA.
"""
import sys

import torch
import torch.nn.functional as F

from event_timing import print_steps


def main():
    m, k, e, n = (int(v) for v in (sys.argv[1:5] if len(sys.argv) > 4 else (4096, 8, 256, 7168)))
    g = torch.Generator(device="cuda").manual_seed(0)
    logits = torch.randn(m, e, device="cuda", generator=g) * 2
    w, sel = logits.softmax(-1).topk(k, -1)
    w = w.bfloat16()
    rows = torch.randn(m * k, n, device="cuda", generator=g).bfloat16()
    routing = torch.zeros(e, m, dtype=torch.bool, device="cuda").scatter_(0, sel.t().contiguous(), True)
    order = torch.arange(m, device="cuda").expand(e, m).masked_select(routing)  # expert-major tokens
    perm = torch.randperm(m * k, device="cuda", generator=g)  # a stand-in for the regroup index
    by_token = order.sort(stable=True).indices
    ws = w.gather(1, sel.sort(1).indices).reshape(-1)
    bags = torch.arange(0, m * k, k, device="cuda")
    per_row = torch.zeros(m, e, device="cuda").scatter_(1, sel, w.float()).t().masked_select(routing)

    def index_add_form():
        out = torch.zeros(m, n, device="cuda")
        out.index_add_(0, order, rows * per_row.unsqueeze(1))
        return out.bfloat16()

    steps = [
        ("one read of the rows (sum)", lambda: rows.sum()),
        ("one copy of the rows (the exchange at W = 1)", lambda: rows.clone()),
        ("regroup: index_copy of the rows", lambda: torch.empty_like(rows).index_copy_(0, perm, rows)),
        ("the weighted sum: embedding_bag (now)",
         lambda: F.embedding_bag(by_token, rows, bags, mode="sum", per_sample_weights=ws)),
        ("its index work: sort of order, sort of the choices, gather of weights",
         lambda: (order.sort(stable=True), w.gather(1, sel.sort(1).indices))),
        ("the weighted sum: widen and weight, index_add into fp32, round (before)", index_add_form),
    ]
    print(f"ep_moe_combine_unpermute steps, M={m} top_k={k} E={e} N={n}, {torch.cuda.get_device_name()}\n")
    print_steps(steps)


if __name__ == "__main__":
    main()
