"""pkb's utils.cuda_helpers, for candidates in the original's format.

In a candidate rank this module is utils.cuda_helpers (pkb.original puts it there). Its
compile_cuda_extension has the original's signature and returns the extension module, as
the original's does; but inside pkb's sandbox nothing may be compiled, so pkb built every
call it could read in the file before the ranks started (build.py, into pkb's cache, keyed
by the call's arguments), and here the build of a call is loaded by the key of its
arguments. A call whose build is not there (arguments computed when the module runs: a
name made from the rank, a source assembled in a loop) fails with one line saying so.
"""

import importlib.machinery
import importlib.util
import json
import os
import sys

from pkb.original.keys import call_key

_manifest = {"extensions": {}, "unresolved": []}
_loaded = {}  # key -> module


def _setup(path):
    """Reads the build's list (before the sandbox); returns the folders to read from."""
    global _manifest
    try:
        with open(path, encoding="utf-8") as f:
            _manifest = json.load(f)
    except OSError:
        _manifest = {"extensions": {}, "unresolved": []}
    return sorted({os.path.dirname(e["path"]) for e in _manifest["extensions"].values()})


def compile_cuda_extension(name, cuda_src, extra_cuda_cflags=None, extra_include_paths=None, extra_ldflags=None):
    """The extension built for these arguments before the run (the original's helper
    JIT-compiles it with torch's load_inline; pkb compiled it the same way, earlier)."""
    key = call_key(name, cuda_src, extra_cuda_cflags, extra_include_paths, extra_ldflags)
    mod = _loaded.get(key)
    if mod is not None:
        return mod
    entry = _manifest["extensions"].get(key)
    if entry is None:
        frame = sys._getframe(1)
        line = frame.f_lineno
        why = next((u["why"] for u in _manifest.get("unresolved", []) if u["line"] == line), None)
        raise RuntimeError(
            f"compile_cuda_extension({name!r}, ...) at line {line}: pkb builds a candidate's extensions before its "
            "ranks start (nothing compiles inside the sandbox), from the arguments it can read in the file, and it "
            + (f"could not read this call's: {why}" if why else
               "built none with these arguments (they are computed when the module runs)"))
    loader = importlib.machinery.ExtensionFileLoader(entry["name"], entry["path"])
    spec = importlib.util.spec_from_file_location(entry["name"], entry["path"], loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    _loaded[key] = mod
    return mod
