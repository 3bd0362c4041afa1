# GOOD CANDIDATE for coll_allreduce (CPU device, Python), a pkb sandbox test.
# Expected verdict: correct
#
# Does in pkb_init what Triton does on the CUDA device: runs the C compiler on a file in
# its scratch folder and loads the library it made. The sandbox lets a Python candidate run
# the compiler (and ptxas), so this works; pkb_init fails (a crash) if it does not.
import ctypes
import os
import shutil
import subprocess
import tempfile

import torch


def pkb_init(ctx, inputs, outputs):
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    work = tempfile.mkdtemp()
    src, lib = os.path.join(work, "twice.c"), os.path.join(work, "twice.so")
    with open(src, "w") as f:
        f.write("int twice(int v) { return 2 * v; }\n")
    subprocess.check_call([cc, src, "-O2", "-shared", "-fPIC", "-o", lib])
    ctx.user = ctypes.CDLL(lib).twice


def pkb_run(ctx, inputs, outputs):
    x, y = inputs.x, outputs.y
    ctx.barrier()
    acc = torch.zeros(x.shape, dtype=torch.float32)
    for p in range(ctx.world):
        acc += ctx.peer(x, p)
    y.copy_(acc * (ctx.user(1) // 2))
    ctx.barrier()
