"""coll_broadcast on the CPU device in Python: every rank's y = the root's x.

Each rank pulls the root's x, between two barriers.
"""


def pkb_run(ctx, inputs, outputs):
    ctx.barrier()
    outputs.y.copy_(ctx.peer(inputs.x, ctx.args["root"]))
    ctx.barrier()
