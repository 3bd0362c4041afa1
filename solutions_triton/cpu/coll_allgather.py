"""coll_allgather on the CPU device in Python: y[p] = rank p's x, on every rank.

Each rank pulls every peer's x into its own y through the shared-memory heap, between two
barriers (inputs ready; nobody reads my x any more).
"""


def pkb_run(ctx, inputs, outputs):
    x, y = inputs.x, outputs.y
    ctx.barrier()
    for p in range(ctx.world):
        y[p].copy_(ctx.peer(x, p))
    ctx.barrier()
