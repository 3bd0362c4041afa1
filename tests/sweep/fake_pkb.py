#!/usr/bin/env python3
"""A stand-in for `pkb build` and `pkb eval` (PKB_SWEEP_EXE), so the sweep's own handling
of every way an evaluation can end is tested quickly and exactly. A candidate says how its
evaluation ends in a line `FAKE: <how> [arg]`:

  correct S   pkb.eval/1 JSON, verdict correct, speedup S; exit 0
  wrong       JSON, verdict wrong; exit 1
  segv        dies of SIGSEGV before writing JSON
  internal    "pkb: internal error: boom" on stderr, exit 7, no JSON
  hang        sleeps until killed
  usage       "pkb: error: ..." on stderr, exit 2 (pkb eval refused the command line)
  slow S      sleeps S seconds, then correct 1.0

Every call appends "build PATH" or "eval PROBLEM SEED PATH" to $FAKE_LOG, and an evaluation
that writes its result then "ran PATH START END GPUS": its wall-clock span (seconds since
the epoch) and the CUDA_VISIBLE_DEVICES it was given ("-" when none), for the tests of
evaluations side by side.
"""
import hashlib
import json
import os
import random
import re
import signal
import sys
import time


def main():
    args = sys.argv[1:]
    while args and args[0] in ("--root", "--problem-dir", "--reference-lib"):
        args = args[2:]
    command, args = args[0], args[1:]
    opts = {}
    while args:
        key = args.pop(0)
        opts[key] = args.pop(0) if args and not args[0].startswith("--") else True
    path = opts["--solution"]
    source = open(path).read()
    how = re.search(r"FAKE: (\w+) ?([\d.]*)", source)
    how, arg = (how.group(1), how.group(2)) if how else ("correct", "1.0")
    with open(os.environ["FAKE_LOG"], "a") as log:
        seed = opts.get("--seed", "fresh")  # pkb eval draws a secret one when none is given
        log.write(f"build {path}\n" if command == "build" else f"eval {opts['--problem']} {seed} {path}\n")
    if command == "build":
        return 0
    started = time.time()

    if how == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if how == "internal":
        print("pkb: internal error: boom", file=sys.stderr)
        return 7
    if how == "hang":
        while True:
            time.sleep(60)
    if how == "usage":
        print("pkb: error: --size huge is not a preset of this problem", file=sys.stderr)
        return 2
    if how == "slow":
        time.sleep(float(arg))
        how, arg = "correct", "1.0"
    speedup = float(arg) if how == "correct" else None
    result = {
        "schema": "pkb.eval/1", "problem": opts["--problem"], "problem_id": 0, "category": "coll",
        "candidate": {"path": path, "sha256": hashlib.sha256(source.encode()).hexdigest(), "backend": "cpu"},
        "run": {"world": int(opts["--world-size"]), "device": opts["--device"], "size": opts.get("--size", "default"),
                "seed": opts.get("--seed", str(random.getrandbits(63)))},
        "verdict": how, "message": "fake", "failure": None,
        "timing": {"reference": {"median_us": 100.0}, "candidate": {"median_us": 100.0 / speedup}} if speedup else None,
        "speedup": speedup, "roofline": None, "flags": [], "wall_s": 0.1,
    }
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write(f"ran {path} {started:.3f} {time.time():.3f} {os.environ.get('CUDA_VISIBLE_DEVICES') or '-'}\n")
    with open(opts["--json"], "w") as f:
        json.dump(result, f)
    return 0 if how == "correct" else 1


if __name__ == "__main__":
    sys.exit(main())
