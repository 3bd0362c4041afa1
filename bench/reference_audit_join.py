"""Joins the reference audit's tables of several device calls (bench/reference_audit.sh run
with ONLY/SKIP, or cut short by its budget) into one: for each problem the row of the last
table that ran it, its note written again from bench/reference_audit_table.py's rules (WHY,
no bound, world sizes excluded), and the counts again.

usage: python3 bench/reference_audit_join.py TABLE.md ... > joined.md
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_audit_table import WHY, spec_has_roofline, world_excluded  # noqa: E402

HEADER = "| problem | median ms | bound ms | fraction | limiter | peak GiB | wall s | note |"


def rows(path):
    with open(path) as f:
        for line in f:
            if line.startswith("| ") and not line.startswith(("| problem ", "| --- ")):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) == 8:
                    yield cells


def host_held(note):
    """The device's measurement of how long the reference's host held a call, kept from its
    note (also in reference_audit_table.py's earlier wording, "host-bound: a call took")."""
    m = re.search(r"; (?:its host held each call|host-bound: a call took) ([\d.]+) ms", note)
    return f"; its host held each call {m.group(1)} ms (launches, and waits where it synchronises)" if m else ""


def main():
    best = {}
    for path in sys.argv[1:]:
        for cells in rows(path):
            ran = not cells[7].startswith("not run")
            if ran or cells[0] not in best:
                best[cells[0]] = cells
    print(HEADER)
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    counts = {"ok": 0, "off": 0, "no bound": 0, "failed": 0, "not run": 0}
    for p in sorted(best):
        cells = best[p]
        median, frac, note = cells[1], cells[3], cells[7]
        if note.startswith("not run"):
            kind = "not run"
        elif not median:
            # pkb's refusal as the device printed it, or as a table already rendered it
            excluded = world_excluded(note) or (note if re.fullmatch(r"needs .+: not run at W=\d+", note) else None)
            kind, note = ("not run", excluded) if excluded else ("failed", note)
        elif not frac:
            kind = "no bound"
            note = "the spec declares no roofline" if spec_has_roofline(p) is False else note
        elif float(frac) < 0.1:
            kind = "off"
            # The device's note has the ratio unrounded (the cells round tiny bounds to 0.000).
            m = re.match(r"(\d+)x off the bound", note)
            off = m.group(1) if m else f"{float(median.split()[0]) / float(cells[2]):.0f}"
            note = f"{off}x off the bound" + (f": {WHY[p]}" if p in WHY else "") + host_held(note)
        else:
            kind, note = "ok", ""
        counts[kind] += 1
        print("| " + " | ".join(cells[:7] + [note]) + " |")
    print()
    print(f"{counts['ok']} within 10x of the bound, {counts['off']} further off, {counts['no bound']} with no bound, "
          f"{counts['failed']} failed, {counts['not run']} not run.")


if __name__ == "__main__":
    main()
