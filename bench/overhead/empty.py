# An empty Python candidate for tests/candidates/problems/test_empty.toml: its timing is
# pkb's own cost of calling a Python pkb_run (tensor views, pkb.Ctx, the call), to hold
# against bench/overhead/empty.cu (CUDA) or empty.cpp (CPU device). bench/overhead/run.sh.


def pkb_run(ctx, inputs, outputs):
    pass
