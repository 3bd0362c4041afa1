# BAD CANDIDATE for coll_allreduce (CPU device, Python).
# Expected verdict: timeout
#
# Rank 0 never joins the barrier the others wait in.


def pkb_run(ctx, inputs, outputs):
    if ctx.rank != 0:
        ctx.barrier()
    while True:
        pass
