"""What a top-k of long rows costs on this GPU, against one pass over the same bytes.

The vocab log-prob references (tp_vocab_parallel_logprob_topk*) take a top-(k+1) of every
row of the sequence-parallel logits; at --size large that is 8192 rows of 32768 bf16. This
times torch.topk there (in bf16, as the references now do, and in fp32, as they did) beside
a copy and a row max (one read of the rows): how much of a reference's time is the top-k
that no libtorch call does in one pass. Prints a markdown table. Needs CUDA.
"""
import sys

import torch

from event_timing import median_ms


def main():
    rows, width, k = (int(x) for x in (sys.argv[1:4] if len(sys.argv) > 3 else (8192, 32768, 11)))
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (2 * torch.randn(rows, width, device="cuda", generator=g)).to(torch.bfloat16)
    xf = x.float()
    print(f"| {rows} x {width}, k = {k} | median ms (20 calls) |")
    print("| --- | --- |")
    for name, fn in [
        ("copy of the bf16 rows (read + write)", lambda: x.clone()),
        ("row max in bf16 (one read)", lambda: x.amax(-1)),
        ("top-k in bf16", lambda: x.topk(k, -1)),
        ("widen to fp32 (read 2 B + write 4 B)", lambda: x.float()),
        ("top-k in fp32", lambda: xf.topk(k, -1)),
    ]:
        print(f"| {name} | {median_ms(fn):.3f} |")


if __name__ == "__main__":
    main()
