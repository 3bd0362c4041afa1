"""coll_scatter on the CPU device in Python: rank r's y = the root's x[r].

Only the root's x has data ((W, M, N); (0, M, N) elsewhere), so the root pushes slice p of
its x into rank p's y through the shared-memory heap; the other ranks only join the two
barriers (every y may be written; nobody writes my y any more).
"""


def pkb_run(ctx, inputs, outputs):
    x, y = inputs.x, outputs.y
    ctx.barrier()
    if ctx.rank == ctx.args["root"]:
        for p in range(ctx.world):
            ctx.peer(y, p).copy_(x[p])
    ctx.barrier()
