# BAD CANDIDATE for coll_allreduce (CPU device, Python).
# Expected verdict: integrity_violation
#
# Right outputs, then zeroes its own input after the final barrier.
import torch


def pkb_run(ctx, inputs, outputs):
    x, y = inputs.x, outputs.y
    ctx.barrier()
    acc = torch.zeros(x.shape, dtype=torch.float32)
    for p in range(ctx.world):
        acc += ctx.peer(x, p)
    y.copy_(acc)
    ctx.barrier()
    x.zero_()
