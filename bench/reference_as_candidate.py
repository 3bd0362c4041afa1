#!/usr/bin/env python3
"""The reference as its own candidate (`pkb eval --solution @reference`), one table.

    python3 bench/reference_as_candidate.py RESULTS.jsonl [W2.jsonl]  > table.md

RESULTS: the records of a sweep (or a grouped eval) at W=1 on one GPU; W2 (optional): the
records of the same at W=2 with both ranks on the GPU (verdicts only). For each problem: the
verdict, both medians, the speedup with its 95% interval, and the speedup once the copy the
reference pays as a candidate is taken off: a reference returns tensors of its own, which
the candidate then copies into pkb's output buffers (`device_copy`: the device's time for a
copy of the outputs' bytes, measured in the same run). That ratio (or the speedup itself)
is what says whether the two sides' timings agree; it is held to [0.95, 1.05]. Where it is not, the column says which
measurement accounts for it: "copy" where the speedups with the copy and without it straddle
the band (calls of a few us, where the copy's own time from an idle device overstates what
it adds inside a call), "host" where the candidate is slower and the candidate rank's host
took longer over its calls than the judge's (`timing.host`: each side's median time for a
call to return; it counts where it outlasts the head start a host gets, the L2 eviction,
or where the call waits on the device), "judge's host" where the candidate is faster and the
judge's host took the longer (a judge process slow throughout: bench/results/h200-2026-12-03,
calls 20-23), "host (probe)" / "judge's host (probe)" where the calls' return times do not
tell (a call that waits on the device returns when the device is done) but the host probe
does: the same fixed ATen op timed on each side's timing thread before its loop (`op_us`)
took over 15% longer on the slower side; else **no**; "noisy" marks a reference timing flagged `noisy_reference`,
"host_mismatch" one pkb flagged so (the two sides' hosts apart where it matters: the machine moved
between the two timings, or the processes differ). "head start" where the candidate is faster,
both sides' calls are host-bound (a call's host over 1.2x its device time) and the candidate's
device time fell short of its host time by over 5 us more than the reference's did: the gate
lets the candidate's host start enqueueing a few us before the judge's clock starts (the
`ready` flag, then the judges' L2 eviction and barrier), the judges' loop only the eviction
(bench/results/h200-2026-12-04, call 15).
The candidate's host per call is its own call less @reference's copy of the outputs
(`copy_median_us`, records since bench/results/h200-2026-12-04 call 2; earlier records counted
the gate's ops and the copy in it, which made the sweeps' median 1.5: call 1 there).
The last line is the two sides' host per call over the whole sweep: a disturbed process moves
one problem either way, while a median away from 1 is a difference between the two sides'
call paths.
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


def measures(d):
    """One record's figures: both medians, the output copy, the speedup without it and whether
    either is within [0.95, 1.05]; each side's host per call (the candidate's less the copy)
    and host probe (op_us; -1 where absent), and the judge's own probe at the candidate's time
    (op_j)."""
    t = d.get("timing") or {}
    host = t.get("host") or {}
    hc, hr = host.get("candidate") or {}, host.get("reference") or {}
    m = {"ref": (t.get("reference") or {}).get("median_us"), "cand": (t.get("candidate") or {}).get("median_us"),
         "copy": (d.get("device_copy") or {}).get("median_us", 0.0),
         "enq_c": hc.get("enqueue_median_us"), "enq_r": hr.get("enqueue_median_us"),
         "op_c": (hc.get("probe") or {}).get("op_us", -1), "op_r": (hr.get("probe") or {}).get("op_us", -1),
         "cpu_c": hc.get("cpu"), "cpu_r": hr.get("cpu"), "adjusted": None, "in_band": None,
         # the judge's own probe at the candidate's time, before its warm-up (records since 12-04)
         "op_j": ((host.get("judge_at_candidate") or [{}])[0]).get("op_us", -1)}
    if m["enq_c"] and hc.get("copy_median_us") is not None:
        m["enq_c"] -= hc["copy_median_us"]  # the reference's run alone, as the judges time it
    # How far each side's device time fell short of its host time, where both sides' calls
    # are host-bound: the head start its host had before the clock's work began.
    m["head_start"] = None
    if m["ref"] and m["cand"] and m["enq_c"] and m["enq_r"]:
        cand_dev = m["cand"] - m["copy"]
        if m["enq_r"] > 1.2 * m["ref"] and m["enq_c"] > 1.2 * cand_dev:
            m["head_start"] = (m["ref"] - m["enq_r"]) - (cand_dev - m["enq_c"])  # > 0: the candidate's the longer
    if m["ref"] and m["cand"]:
        m["adjusted"] = m["ref"] / max(m["cand"] - m["copy"], 1e-9)
        m["in_band"] = 0.95 <= m["adjusted"] <= 1.05 or 0.95 <= d["speedup"] <= 1.05  # with the copy or without
    return m


def main():
    w1 = records(sys.argv[1])
    w2 = records(sys.argv[2]) if len(sys.argv) > 2 else {}
    print("| problem | W=1 | ref us | cand us | speedup [95%] | copy us | copy-adjusted | in [0.95, 1.05] "
          "| enqueue us (cand / ref) | W=2 shared |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    inside = counted = correct = by_copy_n = by_host_n = by_judge_n = by_start_n = mismatch_n = 0
    head_starts = []  # the candidate's head start less the judges', us, where both are host-bound
    host_ratios = []  # candidate / judge, each side's median time for a call to return
    for slug in sorted(set(w1) | set(w2)):
        d = w1.get(slug)
        row = [slug]
        if d is None:
            row += ["not run", "", "", "", "", "", "", ""]
        else:
            correct += d["verdict"] == "correct"
            row.append(d["verdict"])
            m = measures(d)
            ref, cand, copy, ci = m["ref"], m["cand"], m["copy"], d.get("speedup_interval") or {}
            enq_c, enq_r, op_c, op_r = m["enq_c"], m["enq_r"], m["op_c"], m["op_r"]
            enq = f"{enq_c:.1f} / {enq_r:.1f}" if enq_c and enq_r else (f"{enq_c:.1f} / -" if enq_c else "")
            probe_c_slower = op_c > 0 and op_r > 0 and op_c > 1.15 * op_r
            probe_r_slower = op_c > 0 and op_r > 0 and op_r > 1.15 * op_c
            if enq_c and enq_r:
                host_ratios.append(enq_c / enq_r)
            if ref and cand:
                adjusted, ok = m["adjusted"], m["in_band"]
                by_copy = not ok and d["speedup"] < 0.95 and adjusted > 1.05
                enq_host = bool(enq_c and enq_r and enq_c > 1.05 * enq_r)
                enq_judge = bool(enq_c and enq_r and enq_r > 1.05 * enq_c)
                by_host = not ok and not by_copy and adjusted < 0.95 and (enq_host or probe_c_slower)
                by_judge = not ok and not by_copy and adjusted > 1.05 and (enq_judge or probe_r_slower)
                hs = m["head_start"]
                if hs is not None:
                    head_starts.append(hs)
                by_start = not ok and not by_copy and not by_judge and adjusted > 1.05 and hs is not None and hs > 5
                counted += 1
                inside += ok
                by_copy_n += by_copy
                by_host_n += by_host
                by_judge_n += by_judge
                by_start_n += by_start
                why = ("yes" if ok else "no: copy" if by_copy
                       else ("no: host" if enq_host else "no: host (probe)") if by_host
                       else ("no: judge's host" if enq_judge else "no: judge's host (probe)") if by_judge
                       else f"no: head start (+{hs:.0f} us)" if by_start else "**no**")
                if "noisy_reference" in (d.get("flags") or []):
                    why += ", noisy"
                if "host_mismatch" in (d.get("flags") or []):
                    why += ", host_mismatch"
                    mismatch_n += not ok
                row += [f"{ref:.1f}", f"{cand:.1f}",
                        f"{d['speedup']:.3f} [{ci.get('lo', 0):.3f}, {ci.get('hi', 0):.3f}]",
                        f"{copy:.1f}", f"{adjusted:.3f}", why, enq]
            else:
                row += ["", "", "", "", "", "", enq]
        row.append(w2[slug]["verdict"] if slug in w2 else "")
        print("| " + " | ".join(row) + " |")
    w2_correct = sum(d["verdict"] == "correct" for d in w2.values())
    print()
    print(f"W=1: {correct} of {len(w1)} correct; speedup (with the copy or without) within [0.95, 1.05] for {inside} of {counted} "
          f"timed; {by_copy_n} where the speedups with and without the copy straddle the band; {by_host_n} below it "
          f"where the candidate rank's host took longer over the calls or its probe; {by_judge_n} above it where the judge's did; "
          f"{by_start_n} above it where the candidate's host had the longer head start; "
          f"{counted - inside - by_copy_n - by_host_n - by_judge_n - by_start_n} else; {mismatch_n} of those outside the band "
          f"flagged host_mismatch."
          + (f" W=2 shared: {w2_correct} of {len(w2)} correct." if w2 else ""))
    if host_ratios:
        # The two sides' host per call over the whole sweep: a per-process disturbance moves
        # it either way; a median away from 1 is a difference between the sides' call paths.
        host_ratios.sort()
        print(f"Host per call, candidate rank / judge: median {host_ratios[len(host_ratios) // 2]:.2f} over "
              f"{len(host_ratios)} problems; the candidate's the longer by over 5% in "
              f"{sum(x > 1.05 for x in host_ratios)}, the judge's in {sum(x < 1 / 1.05 for x in host_ratios)}.")
    if head_starts:
        head_starts.sort()
        print(f"Head start, candidate's less the judges' where both sides' calls are host-bound: median "
              f"{head_starts[len(head_starts) // 2]:+.1f} us over {len(head_starts)} problems.")


if __name__ == "__main__":
    main()
