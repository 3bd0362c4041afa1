#!/usr/bin/env python3
"""Where the same code takes longer on one side: records of `pkb eval -s @reference
--profile-ops` (timing.host.*.ops, docs/results.md), one table row per problem.

    python3 bench/ops_table.py RUN.jsonl [RUN2.jsonl ...] > table.md

Per problem: the speedup, each side's host per timed call (the calls' mean, us), the part of
the candidate's excess that lies outside any op, and the top-level ops with the largest
excess on the candidate rank's side (reference / candidate us a call). Then, over every
problem, each op's total excess and its median ratio (candidate / reference per call), the
largest first: one op far slower on one side names a cause, every op alike slower names the
process or the machine.
"""
import json
import statistics
import sys
from collections import defaultdict


def rows(paths):
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    yield path, json.loads(line)


def top_ops(host, side):
    ops = host.get(side, {}).get("ops") or []
    return {o["name"]: o for o in ops if not o["nested"]}


def main(paths):
    print("| problem | speedup | host a call: ref / cand (us) | excess outside ops | largest excesses (ref / cand us) |")
    print("| --- | --- | --- | --- | --- |")
    excess = defaultdict(float)
    ratios = defaultdict(list)
    for path, r in rows(paths):
        host = r.get("timing", {}).get("host") or {}
        ref, cand = top_ops(host, "reference"), top_ops(host, "candidate")
        if not ref or not cand:
            print(f"| {r.get('problem')} | | | | no ops ({r.get('verdict')}) |")
            continue
        mean = {s: host[s].get("enqueue_mean_us") or 0 for s in ("reference", "candidate")}
        outside = {s: mean[s] - sum(o["us"] for o in ops.values())
                   for s, ops in (("reference", ref), ("candidate", cand))}
        diffs = []
        for name in set(ref) | set(cand):
            a, b = ref.get(name, {}).get("us", 0), cand.get(name, {}).get("us", 0)
            diffs.append((b - a, name, a, b))
            if name in ref and name in cand and a > 0:
                excess[name] += b - a
                ratios[name].append(b / a)
        diffs.sort(reverse=True)
        cells = ", ".join(f"{n} {a:.1f}/{b:.1f}" for d, n, a, b in diffs[:4] if d > 0)
        sp = r.get("speedup")
        print(f"| {r['problem']} | {sp:.3f} | {mean['reference']:.1f} / {mean['candidate']:.1f} | "
              f"{outside['candidate'] - outside['reference']:+.1f} | {cells} |" if sp is not None else
              f"| {r['problem']} | | | | {r.get('verdict')} |")
    print()
    print("| op (top level) | total excess over the problems (us a call) | candidate / reference: median [min, max] | problems |")
    print("| --- | --- | --- | --- |")
    for name, e in sorted(excess.items(), key=lambda kv: -kv[1])[:25]:
        v = ratios[name]
        print(f"| {name} | {e:+.1f} | {statistics.median(v):.2f} [{min(v):.2f}, {max(v):.2f}] | {len(v)} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
