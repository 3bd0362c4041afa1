# BAD CANDIDATE for coll_allreduce (CPU device, Python).
# Expected verdict: wrong
#
# pkb_run raises: the verdict carries the traceback (ValueError, this file, this line).


def pkb_run(ctx, inputs, outputs):
    raise ValueError("the candidate gave up on purpose")
