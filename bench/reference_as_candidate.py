#!/usr/bin/env python3
"""The reference as its own candidate (`pkb eval --solution @reference`), one table.

    python3 bench/reference_as_candidate.py RESULTS.jsonl [MORE.jsonl ...]  > table.md

RESULTS: pkb eval's or pkb sweep's records of @reference, at W=1 and (optionally) W=2 with
both ranks sharing the GPU, in one file or several (scripts/gpu-check.sh reference_sweep
writes both into one). One row per problem: the W=1 verdict, both medians, the speedup with
its 95% interval, whether it lies within [0.95, 1.05], pkb's flags, and the W=2 verdict.

A reference timed against itself should come out near 1.0x. Where it does not, the flags
and docs/results.md say why: @reference copies its outputs into pkb's buffers inside the
timed call (a few us, most of a call of the collectives at W=1), and a launch-bound call
follows its host, whose speed can differ between the two sides' timings (`host_mismatch`).
"""
import json
import sys


def records(paths):
    """{world: {problem: record}}; a later record of the same problem and W replaces an earlier one."""
    out = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                d = json.loads(line)
                world = (d.get("run") or {}).get("world", 1)
                out.setdefault(world, {})[d["problem"]] = d
    return out


def main():
    by_world = records(sys.argv[1:])
    w1, w2 = by_world.get(1, {}), by_world.get(2, {})
    print("| problem | W=1 | ref us | cand us | speedup [95%] | in [0.95, 1.05] | flags | W=2 shared |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    timed = inside = 0
    for slug in sorted(set(w1) | set(w2)):
        d = w1.get(slug)
        row = [slug]
        if d is None:
            row += ["not run", "", "", "", "", ""]
        else:
            t = d.get("timing") or {}
            ref = (t.get("reference") or {}).get("median_us")
            cand = (t.get("candidate") or {}).get("median_us")
            sp, ci = d.get("speedup"), d.get("speedup_interval") or {}
            row.append(d["verdict"])
            if ref and cand and sp:
                ok = 0.95 <= sp <= 1.05
                timed += 1
                inside += ok
                row += [f"{ref:.1f}", f"{cand:.1f}", f"{sp:.3f} [{ci.get('lo', 0):.3f}, {ci.get('hi', 0):.3f}]",
                        "yes" if ok else "no"]
            else:
                row += ["", "", "", ""]
            row.append(", ".join(d.get("flags") or []))
        row.append(w2[slug]["verdict"] if slug in w2 else "")
        print("| " + " | ".join(row) + " |")
    print()
    line = (f"W=1: {sum(d['verdict'] == 'correct' for d in w1.values())} of {len(w1)} correct; "
            f"speedup within [0.95, 1.05] for {inside} of {timed} timed.")
    if w2:
        line += f" W=2 shared: {sum(d['verdict'] == 'correct' for d in w2.values())} of {len(w2)} correct."
    print(line)


if __name__ == "__main__":
    main()
