"""Per-target compile seconds from tu_timer.sh's log (bench/compile/run.sh)."""
import re
import sys
from collections import defaultdict

rows = defaultdict(list)  # target -> [(start, end, seconds, output)]
for line in open(sys.argv[1]):
    start, end, secs, out = line.split(maxsplit=3)
    out = out.strip()
    m = re.search(r"CMakeFiles/(\w+)\.dir/", out)
    if out.endswith(".gch"):
        target = "pch (pkb_rt)"
    elif m:
        target = m.group(1)
    else:
        target = "link " + out.rsplit("/", 1)[-1]
    rows[target].append((float(start), float(end), float(secs), out))

print("| target | files | compile s (sum) | slowest file s | wall span s |")
print("| --- | ---: | ---: | ---: | ---: |")
total = 0.0
for target, rs in sorted(rows.items(), key=lambda kv: min(r[0] for r in kv[1])):
    s = sum(r[2] for r in rs)
    total += s
    span = max(r[1] for r in rs) - min(r[0] for r in rs)
    print(f"| {target} | {len(rs)} | {s:.1f} | {max(r[2] for r in rs):.1f} | {span:.1f} |")
print(f"| all | {sum(len(r) for r in rows.values())} | {total:.1f} | | |")
print("\nevery file, slowest first:")
for start, end, secs, out in sorted((r for rs in rows.values() for r in rs), key=lambda r: -r[2]):
    print(f"{secs:7.2f} {out}")
