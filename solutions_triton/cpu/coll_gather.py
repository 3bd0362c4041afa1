"""coll_gather on the CPU device in Python: the root's y[p] = rank p's x; y is empty
elsewhere.

The root pulls every rank's x, between two barriers that every rank joins.
"""


def pkb_run(ctx, inputs, outputs):
    x, y = inputs.x, outputs.y
    ctx.barrier()
    if ctx.rank == ctx.args["root"]:
        for p in range(ctx.world):
            y[p].copy_(ctx.peer(x, p))
    ctx.barrier()
