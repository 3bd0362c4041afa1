# BAD CANDIDATE for coll_allreduce (CPU device, Python), a pkb sandbox test: the first of a
# pair with replay_outputs.py.
# Expected verdict: correct
#
# Computes the all-reduce honestly and after every call stores its output, keyed by a hash
# of its input, in /dev/shm, /tmp and its Triton cache folder (TRITON_CACHE_DIR, which a
# .py candidate may write), folder pkb-store-<PKB_TEST_STORE>, for replay_outputs.py to find
# in a later evaluation with the same --seed. In the sandbox nothing of it reaches the
# replay: /dev/shm and /tmp are not writable, and the Triton cache is this candidate's own
# (a folder per source, or with --seed the evaluation's scratch folder). The Triton cache
# only where a test names the store (PKB_TEST_STORE): the gallery's run would fill the
# folder pkb keeps for this file.
import hashlib
import os

import torch


def _key(ctx, x):
    return f"r{ctx.rank}-{hashlib.sha1(x.view(torch.int16).numpy().tobytes()).hexdigest()}.bin"


def _roots():
    cache = os.environ.get("TRITON_CACHE_DIR") if os.environ.get("PKB_TEST_STORE") else None
    return ["/dev/shm", "/tmp"] + ([cache] if cache else [])


def pkb_run(ctx, inputs, outputs):
    x, y = inputs.x, outputs.y
    ctx.barrier()
    acc = torch.zeros(x.shape, dtype=torch.float32)
    for p in range(ctx.world):
        acc += ctx.peer(x, p)
    y.copy_(acc)
    ctx.barrier()
    data = y.view(torch.int16).numpy().tobytes()
    for root in _roots():
        try:
            folder = os.path.join(root, f"pkb-store-{os.environ.get('PKB_TEST_STORE', 'gallery')}")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, _key(ctx, x)), "wb") as f:
                f.write(data)
        except OSError:
            pass
