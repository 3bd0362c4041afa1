#!/usr/bin/env python3
"""The reference as its own candidate (`pkb eval --solution @reference`): pkb's timing symmetry.

    python3 bench/reference_as_candidate.py RESULTS.jsonl [--against EARLIER.jsonl] > table.md

RESULTS: pkb eval's or pkb sweep's records of @reference, at W=1 and (optionally) W=2 with
both ranks sharing the GPU, in one file (scripts/gpu-check.sh reference_sweep writes both
into one). One row per problem: the W=1 verdict, both sides' medians in the timed rounds,
the reference's baseline (alone, before the candidate was loaded), the machine's drift (the
judges' own reference, rounds over baseline), the speedup with its 95%
interval, whether it lies within [0.95, 1.05], how the rounds ended, pkb's flags, the W=2
verdict; with --against, the speedup of the same problem in an earlier sweep and whether
the two differ by less than 5%.

The same code on both sides must come out at 1.0x: both are timed in the candidate rank, by
the judge's clock through the same gate, in alternating rounds (docs/results.md). A timing
"does not count" where pkb eval's flags put it in doubt (noisy_timing, throttled, ...;
noisy_gate in older records): the last line counts those, each with its flags.
"""
import argparse
import json

DOUBT = {"throttled", "shared_gpu", "left_processes", "faster_than_roofline", "timing_escape", "timing_unverified",
         "noisy_timing", "noisy_gate", "noisy_reference", "host_mismatch", "profiled"}


def records(path):
    """{world: {problem: record}}; a later record of the same problem and W replaces an earlier one."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                d = json.loads(line)
                out.setdefault((d.get("run") or {}).get("world", 1), {})[d["problem"]] = d
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--against", help="an earlier sweep's records: each speedup beside this one's")
    a = ap.parse_args()
    by_world = records(a.results)
    w1, w2 = by_world.get(1, {}), by_world.get(2, {})
    before = records(a.against).get(1, {}) if a.against else {}
    head = ["problem", "W=1", "ref us", "cand us", "baseline us", "machine", "speedup [95%]", "in [0.95, 1.05]", "rounds",
            "flags"]
    if a.against:
        head += ["earlier", "apart < 5%"]
    head.append("W=2 shared")
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    timed = inside = agree = both = seen = 0
    doubts = []
    for slug in sorted(set(w1) | set(w2)):
        d = w1.get(slug)
        row = [slug]
        if d is None:
            row += ["not run"] + [""] * (len(head) - 3)
        else:
            t = d.get("timing") or {}
            ref = (t.get("reference") or {}).get("median_us")
            cand = (t.get("candidate") or {}).get("median_us")
            base = (t.get("baseline") or {}).get("median_us")
            m = t.get("machine") or {}
            mb, mr = (m.get("baseline") or {}).get("median_us"), (m.get("rounds") or {}).get("median_us")
            machine = f"{mr / mb:.3f}" if mb and mr else ""  # the judges' own reference, rounds over baseline
            sp, ci, rd = d.get("speedup"), d.get("speedup_interval") or {}, t.get("rounds") or {}
            flags = d.get("flags") or []
            row.append(d["verdict"])
            seen += bool(t.get("candidate_beside"))  # the same code: nothing of a candidate should be
            if ref and cand and sp:
                ok = 0.95 <= sp <= 1.05
                timed += 1
                inside += ok
                if DOUBT & set(flags):
                    doubts.append(f"{slug} ({', '.join(sorted(DOUBT & set(flags)))})")
                row += [f"{ref:.1f}", f"{cand:.1f}", f"{base:.1f}" if base else "", machine,
                        f"{sp:.3f} [{ci.get('lo', 0):.3f}, {ci.get('hi', 0):.3f}]", "yes" if ok else "**no**",
                        f"{rd.get('count', '')} x {rd.get('block', '')}, {rd.get('stop', '')}"]
            else:
                row += [""] * 7
            row.append(", ".join(flags))
            if a.against:
                e = before.get(slug, {}).get("speedup")
                if sp and e:
                    close = abs(sp / e - 1) < 0.05
                    both += 1
                    agree += close
                    row += [f"{e:.3f}", "yes" if close else "**no**"]
                else:
                    row += ["", ""]
        if d is not None:
            row.append(w2[slug]["verdict"] if slug in w2 else "")
        print("| " + " | ".join(row) + " |")
    print()
    line = (f"W=1: {sum(d['verdict'] == 'correct' for d in w1.values())} of {len(w1)} correct; "
            f"speedup within [0.95, 1.05] for {inside} of {timed} timed")
    if a.against:
        line += f"; within 5% of the earlier sweep for {agree} of {both}"
    line += f"; {len(doubts)} timings that do not count" + (": " + "; ".join(doubts) if doubts else "")
    line += f"; a candidate seen beside the reference in {seen}."
    if w2:
        line += f" W=2 shared: {sum(d['verdict'] == 'correct' for d in w2.values())} of {len(w2)} correct."
    print(line)


if __name__ == "__main__":
    main()
