# BAD CANDIDATE for coll_allreduce (CPU device, Python), a pkb sandbox test.
# Expected verdict: correct
#
# Tries to run a shell. Python candidates may start processes (Triton runs ptxas and a C
# compiler), but only those programs may run: the shell is denied, and the candidate then
# computes the right answer. Were the shell allowed, it would write a wrong output on
# purpose, so a leak shows as verdict "wrong" (as it does under --no-sandbox).
import subprocess

import torch


def pkb_init(ctx, inputs, outputs):
    try:
        subprocess.run(["/bin/sh", "-c", "true"], check=True)
        ctx.user = "ran a shell"
    except OSError:
        ctx.user = None


def pkb_run(ctx, inputs, outputs):
    x, y = inputs.x, outputs.y
    ctx.barrier()
    acc = torch.zeros(x.shape, dtype=torch.float32)
    for p in range(ctx.world):
        acc += ctx.peer(x, p)
    y.copy_(acc if ctx.user is None else acc + 1)
    ctx.barrier()
