"""Per-target compile times from tu_timer.sh's log (bench/compile/run.sh): CPU seconds (user +
system, which other work on the machine does not inflate) and wall seconds, summed over a
target's files, and the wall span from its first file's start to its last file's end."""
import re
import sys
from collections import defaultdict

rows = defaultdict(list)  # target -> [(start, end, wall, cpu, output)]
for line in open(sys.argv[1]):
    start, end, wall, cpu, out = line.split(maxsplit=4)
    out = out.strip()
    m = re.search(r"CMakeFiles/(\w+)\.dir/", out)
    if out.endswith(".gch"):
        target = "pch " + (m.group(1) if m else "?")
    elif m:
        target = m.group(1)
    else:
        target = "link " + out.rsplit("/", 1)[-1]
    rows[target].append((float(start), float(end), float(wall), float(cpu), out))

print("| target | files | CPU s | wall s | slowest file, CPU s | wall span s |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for target, rs in sorted(rows.items(), key=lambda kv: min(r[0] for r in kv[1])):
    span = max(r[1] for r in rs) - min(r[0] for r in rs)
    print(f"| {target} | {len(rs)} | {sum(r[3] for r in rs):.1f} | {sum(r[2] for r in rs):.1f} "
          f"| {max(r[3] for r in rs):.1f} | {span:.1f} |")
allr = [r for rs in rows.values() for r in rs]
print(f"| all | {len(allr)} | {sum(r[3] for r in allr):.1f} | {sum(r[2] for r in allr):.1f} | | |")
print("\nevery file, CPU s, slowest first:")
for r in sorted(allr, key=lambda r: -r[3]):
    print(f"{r[3]:7.2f} {r[4]}")
