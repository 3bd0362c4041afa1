# BAD CANDIDATE for coll_allreduce (CPU device, Python).
# Expected verdict: compile_error
#
# Not Python: pkb's build step (Python's parser, no code run) rejects it.


def pkb_run(ctx, inputs, outputs)
    return 0
