#!/usr/bin/env python3
"""Issue 35's host asymmetry by setting: the records of `gpu-check.sh asym35` (results.jsonl).

    python3 bench/host_asymmetry.py RESULTS.jsonl > table.md

For each problem and setting (default, --no-sandbox, --no-mps, --cache warm): the speedup of
@reference and each side's median time for a timed call to return (`timing.host`), candidate
rank over judge, per evaluation.
"""
import json
import sys
from collections import defaultdict


def main():
    rows = defaultdict(list)
    for line in open(sys.argv[1]):
        d = json.loads(line)
        step = d.get("step", "")
        if not step.startswith("asym35 "):
            continue
        _, problem, *mode, _k = step.split()
        h = (d.get("timing") or {}).get("host") or {}
        c = (h.get("candidate") or {}).get("enqueue_median_us")
        r = (h.get("reference") or {}).get("enqueue_median_us")
        rows[(problem, " ".join(mode))].append((d.get("speedup", 0), c, r, "noisy_reference" in (d.get("flags") or [])))
    print("| problem | setting | speedup | host per call, candidate / judge (us) | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for (problem, mode), evals in rows.items():
        sp = ", ".join(f"{s:.2f}" + (" (noisy)" if n else "") for s, _, _, n in evals)
        host = ", ".join(f"{c:.0f} / {r:.0f}" if c and r else "-" for _, c, r, _ in evals)
        ratio = ", ".join(f"{c / r:.2f}" if c and r else "-" for _, c, r, _ in evals)
        print(f"| {problem} | {mode} | {sp} | {host} | {ratio} |")


if __name__ == "__main__":
    main()
