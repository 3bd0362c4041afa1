# A Python candidate for tests/candidates/problems/test_empty.toml that fails unless its
# rank's interpreter sees the rank's own environment, as the C library does: in a rank
# forked from a fork server that had already started Python, os.environ began as the
# server's copy (no PKB_RANK). With PKB_EXPECT_PRELOADED=1 it also fails unless pkb (and
# so torch) was imported before the fork, in the server, rather than in this rank.
import ctypes
import os

import pkb

_libc = ctypes.CDLL(None)
_libc.getenv.restype = ctypes.c_char_p


def pkb_run(ctx, inputs, outputs):
    for name in ("PKB_RANK", "PKB_BOOTSTRAP_FD", "PKB_EXPECT_PRELOADED"):
        said = _libc.getenv(name.encode())
        if os.environ.get(name) != (said.decode() if said else None):
            raise RuntimeError(f"os.environ[{name!r}] is {os.environ.get(name)!r}, getenv gives {said!r}")
    if os.environ.get("PKB_EXPECT_PRELOADED") == "1" and pkb.IMPORTED_IN == os.getpid():
        raise RuntimeError("pkb was imported in this rank, not before it was forked")
