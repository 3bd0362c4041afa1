"""The key of one compile_cuda_extension call, from its arguments alone.

pkb's builder (build.py, before the run) and utils.cuda_helpers (in the rank) compute it
the same way: the builder files each extension it built under this key in the candidate's
extensions.json, and the rank finds the build of a call by it. The toolchain is not part of
it (the builder keys its cache folders by both).
"""

import hashlib
import json

# compile_cuda_extension's parameters, in order (the original's utils/cuda_helpers.py).
PARAMETERS = ("name", "cuda_src", "extra_cuda_cflags", "extra_include_paths", "extra_ldflags")


def call_key(name, cuda_src, extra_cuda_cflags=None, extra_include_paths=None, extra_ldflags=None):
    """A 32-hex-digit digest of one call's arguments (None and [] alike, as the helper treats them)."""
    doc = {
        "name": name,
        "cuda_src": cuda_src,
        "extra_cuda_cflags": [str(f) for f in (extra_cuda_cflags or [])],
        "extra_include_paths": [str(p) for p in (extra_include_paths or [])],
        "extra_ldflags": [str(f) for f in (extra_ldflags or [])],
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]
