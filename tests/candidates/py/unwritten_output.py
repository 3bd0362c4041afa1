# BAD CANDIDATE for coll_allreduce (CPU device, Python).
# Expected verdict: wrong
#
# Sums every row but the last: the last row of y keeps pkb's poison.
import torch


def pkb_run(ctx, inputs, outputs):
    x, y = inputs.x, outputs.y
    ctx.barrier()
    acc = torch.zeros(x.shape, dtype=torch.float32)
    for p in range(ctx.world):
        acc += ctx.peer(x, p)
    y[:-1].copy_(acc[:-1])
    ctx.barrier()
