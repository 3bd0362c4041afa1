# BAD CANDIDATE for coll_allreduce (CPU device, Python).
# Expected verdict: compile_error
#
# Imports a module that does not exist: the import fails in the rank.
import pkb_no_such_module  # noqa: F401


def pkb_run(ctx, inputs, outputs):
    return 0
