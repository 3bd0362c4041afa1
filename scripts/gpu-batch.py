"""Runs a list of checks on the lent GPU machine, several at once, for scripts/gpu-check.sh.

Correctness checks (dryruns recomputed in Python, gallery verdicts) do not need a GPU to
themselves: they run --parallel at a time. Each job's output goes to the log in job order,
one summary row per job (in order), and the JSON of an eval (a path given as {json} in the
command) to the results file with its name as "step".

Jobs come one per line on stdin, tab-separated: NAME, EXPECTED_EXIT, COMMAND (bash).

usage: gpu-batch.py --summary S --log L --results R --end EPOCH [--parallel P]
"""
import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile
import time


def run(job, end, tmp):
    name, want, cmd = job
    left = end - time.time()
    if left < 10:
        return name, want, None, 0.0, "skipped: out of BUDGET_S", ""
    js = os.path.join(tmp, f"{abs(hash(name))}.json")
    t0 = time.time()
    try:
        p = subprocess.run(["bash", "-c", cmd.replace("{json}", js)], capture_output=True, text=True,
                           timeout=min(left, 600))
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = 124, (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    note = ""
    if rc == 2 and "pick another --world-size" in out:
        note = "skipped: W outside the problem's constraints"
    elif str(rc) != want:
        note = f"**expected exit {want}**: " + " ".join(out.strip().splitlines()[-2:])[:200]
    result = ""
    if os.path.exists(js):
        d = json.load(open(js))
        d["step"] = name
        result = json.dumps(d)
        t = d.get("timing") or {}
        c = (t.get("candidate") or {}).get("median_us")
        note += (" " if note else "") + f"{d['verdict']}"
        if d["verdict"] != "correct":
            note += f": {d['message'][:150]}"
        elif c:
            r = t["reference"]["median_us"]
            note += f"; cand {c:.1f} us, ref {r:.1f} us, speedup {d.get('speedup') or 0:.2f}x"
            if d.get("busbw_gbps"):
                note += f", busbw {d['busbw_gbps']['candidate']:.0f} GB/s (ref {d['busbw_gbps']['reference']:.0f})"
            if d.get("flags"):
                note += ", flags " + ",".join(d["flags"])
        os.remove(js)
    return name, want, rc, time.time() - t0, note.replace("|", "/"), out, result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--summary", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--end", type=float, required=True)
    ap.add_argument("--parallel", type=int, default=4)
    a = ap.parse_args()
    jobs = [tuple(line.rstrip("\n").split("\t", 2)) for line in sys.stdin if line.strip()]
    with tempfile.TemporaryDirectory() as tmp, cf.ThreadPoolExecutor(a.parallel) as pool:
        done = list(pool.map(lambda j: run(j, a.end, tmp), jobs))
    with open(a.summary, "a") as s, open(a.log, "a") as log, open(a.results, "a") as res:
        for name, want, rc, secs, note, *rest in done:
            out = rest[0] if rest else ""
            log.write(f"=== {name}\n{out}\n")
            s.write(f"| {name} | {'' if rc is None else rc} | {secs:.1f} | {note} |\n")
            if len(rest) > 1 and rest[1]:
                res.write(rest[1] + "\n")
    bad = sum(1 for d in done if d[2] is not None and str(d[2]) != d[1])
    print(f"{len(done)} jobs, {bad} with an unexpected exit", file=sys.stderr)


main()
