#!/usr/bin/env python3
"""The reference as its own candidate, runs side by side: does pinning each side's timed
thread to one CPU (`--pin-cpus`, launch/cpus.hpp) bring the two sides' timings together?

    python3 bench/pin_ab.py off=a.jsonl on=b.jsonl off=c.jsonl on=d.jsonl  > table.md

Each argument: a label and the records of a grouped `pkb eval -p ... -s @reference -w 1
--no-reference-cache` (each run times its references afresh). Runs with the same label are
pooled in the summary. Per problem and run: the speedup (less @reference's output copy where
that brings it into the band, as bench/reference_as_candidate.py), the candidate's host probe
over the judge's (op_us; both sides' timing threads, just before their loops) and the CPUs
each side's timing thread ran on (reference / candidate). Per label: how many timed
evaluations fall within [0.95, 1.05], how many have the probes more than 1.25x apart (each
way), the probes' ratio at the median and the 90th percentile of |log|, the host per call
(candidate / judge) at the median, how many pkb flagged host_mismatch, and (records with the
judge's own probe at the candidate's time, `timing.host.judge_at_candidate`) in how many the
judge's probe moved over 1.25x between its two times (the machine's host changed) and in how
many the two processes' probes at the candidate's time are over 1.25x apart (the processes
differ). Cells: speedup, p(candidate / judge probe), j(judge's moved / processes apart).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_as_candidate import measures, records  # noqa: E402


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main():
    runs = [(a.split("=", 1)[0], records(a.split("=", 1)[1])) for a in sys.argv[1:]]
    slugs = sorted(set().union(*(r.keys() for _, r in runs)))
    print("| problem | " + " | ".join(f"{lab} #{i + 1}" for i, (lab, _) in enumerate(runs)) + " |")
    print("| --- |" + " --- |" * len(runs))
    pooled = {}
    for slug in slugs:
        cells = []
        for lab, recs in runs:
            d = recs.get(slug)
            if d is None:
                cells.append("")
                continue
            m = measures(d)
            p = pooled.setdefault(lab, {"n": 0, "timed": 0, "band": 0, "slow_c": 0, "slow_r": 0, "logs": [], "host": [],
                                        "mismatch": 0, "correct": 0, "moved": 0, "apart": 0, "judged": 0})
            p["n"] += 1
            p["correct"] += d["verdict"] == "correct"
            if m["in_band"] is None:
                cells.append(d["verdict"])
                continue
            p["timed"] += 1
            p["band"] += m["in_band"]
            p["mismatch"] += "host_mismatch" in (d.get("flags") or [])
            probe = ""
            if m["op_c"] > 0 and m["op_r"] > 0:
                r = m["op_c"] / m["op_r"]
                p["logs"].append(abs(math.log(r)))
                p["slow_c"] += r > 1.25
                p["slow_r"] += r < 1 / 1.25
                probe = f" p{r:.2f}"
            if m["op_j"] > 0 and m["op_c"] > 0 and m["op_r"] > 0:
                # the judge's process at the two times (the machine moved?), and the two
                # processes at one time (they differ?)
                moved, apart = m["op_j"] / m["op_r"], m["op_c"] / m["op_j"]
                p["judged"] += 1
                p["moved"] += not (1 / 1.25 <= moved <= 1.25)
                p["apart"] += not (1 / 1.25 <= apart <= 1.25)
                probe += f" j{moved:.2f}/{apart:.2f}"
            if m["enq_c"] and m["enq_r"]:
                p["host"].append(m["enq_c"] / m["enq_r"])
            s = m["adjusted"] if (0.95 <= m["adjusted"] <= 1.05 and not 0.95 <= d["speedup"] <= 1.05) else d["speedup"]
            mark = "" if m["in_band"] else "*"
            cells.append(f"{mark}{s:.3f}{mark}{probe} ({m['cpu_r']}/{m['cpu_c']})")
        print(f"| {slug} | " + " | ".join(cells) + " |")
    print()
    print("| runs | evaluations | correct | timed | within [0.95, 1.05] | probes >1.25x apart (candidate's / judge's slower) "
          "| probe ratio: median, p90 | host per call, candidate / judge: median | host_mismatch "
          "| judge's probe moved >1.25x between the timings / processes >1.25x apart at the candidate's time |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for lab, p in pooled.items():
        print(f"| {lab} | {p['n']} | {p['correct']} | {p['timed']} | {p['band']} | {p['slow_c']} / {p['slow_r']} "
              f"| {math.exp(pct(p['logs'], 0.5)):.2f}, {math.exp(pct(p['logs'], 0.9)):.2f} "
              f"| {pct(p['host'], 0.5):.2f} | {p['mismatch']} "
              f"| {p['moved']} / {p['apart']} of {p['judged']} |")


if __name__ == "__main__":
    main()
