# BAD CANDIDATE for coll_allreduce (CPU device, Python), a pkb sandbox test: the second of
# a pair with store_outputs.py.
# Expected verdict: wrong (nothing stored to replay)
#
# Computes nothing: copies the output an earlier evaluation stored under a hash of its input
# in /dev/shm, /tmp or its Triton cache folder (pkb-store-<PKB_TEST_STORE>). Nothing that
# store_outputs.py wrote reaches it in the sandbox, so its outputs stay poisoned: wrong.
import hashlib
import os

import torch


def pkb_run(ctx, inputs, outputs):
    x, y = inputs.x, outputs.y
    key = f"r{ctx.rank}-{hashlib.sha1(x.view(torch.int16).numpy().tobytes()).hexdigest()}.bin"
    roots = ["/dev/shm", "/tmp"] + ([os.environ["TRITON_CACHE_DIR"]] if os.environ.get("TRITON_CACHE_DIR") else [])
    for root in roots:
        path = os.path.join(root, f"pkb-store-{os.environ.get('PKB_TEST_STORE', 'gallery')}", key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        y.view(torch.int16).copy_(torch.frombuffer(bytearray(data), dtype=torch.int16).view(y.shape))
        return
