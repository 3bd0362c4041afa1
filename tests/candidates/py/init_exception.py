# BAD CANDIDATE for coll_allreduce (CPU device, Python).
# Expected verdict: crash
#
# pkb_init raises (as a failed Triton compilation would): the run stops before any trial.


def pkb_init(ctx, inputs, outputs):
    return {}["no such key"]


def pkb_run(ctx, inputs, outputs):
    return 0
