"""coll_scatter on the CPU device in Python: rank r's y = the root's x[r].

Only the root's x has data ((W, M, N); (0, M, N) elsewhere), so the root's copy is viewed
at its own shape. Each rank pulls its slice, between two barriers.
"""


def pkb_run(ctx, inputs, outputs):
    x, y = inputs.x, outputs.y
    root = ctx.args["root"]
    ctx.barrier()
    y.copy_(ctx.peer(x, root, shape=(ctx.world, *y.shape))[ctx.rank])
    ctx.barrier()
