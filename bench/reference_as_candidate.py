#!/usr/bin/env python3
"""The reference as its own candidate (`pkb eval --solution @reference`), one table.

    python3 bench/reference_as_candidate.py RESULTS.jsonl [W2.jsonl]  > table.md

RESULTS: the records of a sweep (or a grouped eval) at W=1 on one GPU; W2 (optional): the
records of the same at W=2 with both ranks on the GPU (verdicts only). For each problem: the
verdict, both medians, the speedup with its 95% interval, and the speedup once the copy the
reference pays as a candidate is taken off: a reference returns tensors of its own, which
the candidate then copies into pkb's output buffers (`device_copy`: the device's time for a
copy of the outputs' bytes, measured in the same run). That ratio is what says whether the
two sides' timings agree; it is held to [0.95, 1.05]. Where it is not, the last column says
whether the host explains it: each side's median time to enqueue a call (`timing.host`),
where a call's enqueue outlasts the head start its host gets (the L2 eviction) and the
candidate rank's host enqueues the same calls more slowly than the judge's.
"""
import json
import sys


def records(path):
    out = {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        d = json.loads(line)
        out[d["problem"]] = d
    return out


def main():
    w1 = records(sys.argv[1])
    w2 = records(sys.argv[2]) if len(sys.argv) > 2 else {}
    print("| problem | W=1 | ref us | cand us | speedup [95%] | copy us | copy-adjusted | in [0.95, 1.05] "
          "| enqueue us (cand / ref) | W=2 shared |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    inside = counted = correct = host_slower = 0
    for slug in sorted(set(w1) | set(w2)):
        d = w1.get(slug)
        row = [slug]
        if d is None:
            row += ["not run", "", "", "", "", "", "", ""]
        else:
            correct += d["verdict"] == "correct"
            row.append(d["verdict"])
            t = d.get("timing") or {}
            ref = (t.get("reference") or {}).get("median_us")
            cand = (t.get("candidate") or {}).get("median_us")
            copy = (d.get("device_copy") or {}).get("median_us", 0.0)
            ci = d.get("speedup_interval") or {}
            host = t.get("host") or {}
            enq_c = (host.get("candidate") or {}).get("enqueue_median_us")
            enq_r = (host.get("reference") or {}).get("enqueue_median_us")
            enq = f"{enq_c:.1f} / {enq_r:.1f}" if enq_c and enq_r else (f"{enq_c:.1f} / -" if enq_c else "")
            if ref and cand:
                adjusted = ref / max(cand - copy, 1e-9)
                ok = 0.95 <= adjusted <= 1.05
                counted += 1
                inside += ok
                # The host explains a slower candidate where its enqueue outlasts the reference's
                # whole call and is slower than the judge's.
                by_host = not ok and adjusted < 0.95 and enq_c and enq_r and enq_c > 1.2 * enq_r and enq_c > ref
                host_slower += bool(by_host)
                row += [f"{ref:.1f}", f"{cand:.1f}",
                        f"{d['speedup']:.3f} [{ci.get('lo', 0):.3f}, {ci.get('hi', 0):.3f}]",
                        f"{copy:.1f}", f"{adjusted:.3f}", "yes" if ok else ("no: host" if by_host else "**no**"), enq]
            else:
                row += ["", "", "", "", "", "", enq]
        row.append(w2[slug]["verdict"] if slug in w2 else "")
        print("| " + " | ".join(row) + " |")
    w2_correct = sum(d["verdict"] == "correct" for d in w2.values())
    print()
    print(f"W=1: {correct} of {len(w1)} correct; copy-adjusted speedup within [0.95, 1.05] for {inside} of {counted} timed, "
          f"{host_slower} more below it where the candidate rank's host enqueued the calls more slowly."
          + (f" W=2 shared: {w2_correct} of {len(w2)} correct." if w2 else ""))


if __name__ == "__main__":
    main()
