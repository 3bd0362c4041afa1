# BAD CANDIDATE for coll_allreduce (CPU device, Python).
# Expected verdict: compile_error
#
# Defines pkb_init but no pkb_run.


def pkb_init(ctx, inputs, outputs):
    return 0
