#!/usr/bin/env bash
# Where the test suite's CPU time goes, by program: ctest (the tests named by REGEX, else
# all) under the kernel's process accounting, then the CPU seconds of every process that
# ended, summed by its name and, for pkb, by what it was (a command, a process it exec'd, a
# fork: the fork server's ranks), as a markdown table. Needs root and acct (`apt-get install
# acct`); run in a build with the tests, on a machine doing nothing else.
#
#   bench/suite_cpu.sh BUILD_DIR [REGEX]
set -euo pipefail
build=$(cd "${1:?usage: bench/suite_cpu.sh BUILD_DIR [REGEX]}" && pwd)
regex=${2:-}
work=$(mktemp -d /tmp/pkb-suite-cpu.XXXXXX)
trap 'accton off >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
touch "$work/acct"
accton "$work/acct" >/dev/null
start=$(date +%s)
(cd "$build" && XDG_CACHE_HOME="$work/cache" ctest -j "$(nproc)" --timeout 900 ${regex:+-R "$regex"} >"$work/ctest.log" 2>&1) || true
accton off >/dev/null
wall=$(($(date +%s) - start))
grep -E "tests passed|Total Test" "$work/ctest.log" || true
dump-acct "$work/acct" | python3 -c '
import collections, sys
wall = int(sys.argv[1])
rows = []
for line in sys.stdin:
    f = [x.strip() for x in line.split("|")]
    rows.append((f[0], (float(f[2]) + float(f[3])) / 100, int(f[9]), int(f[10]), "F" in f[11]))
by_pid = {r[2]: r for r in rows}
total = sum(r[1] for r in rows)
kind = collections.Counter(); cpu = collections.defaultdict(float)
for name, s, pid, ppid, forked in rows:
    parent = by_pid.get(ppid, ("?",))[0]
    if name in ("pkb", "pt_gloo_runloop"):
        name = "pkb, forked (ranks)" if forked else "pkb, exec'"'"'d by pkb" if parent == "pkb" else "pkb, a command"
    kind[name] += 1; cpu[name] += s
print(f"{len(rows)} processes, {total:.0f} CPU-s in {wall} s of wall\n")
print("| program | processes | CPU-s | share |\n| --- | --- | --- | --- |")
for name, s in sorted(cpu.items(), key=lambda x: -x[1])[:15]:
    print(f"| {name} | {kind[name]} | {s:.1f} | {100 * s / total:.1f}% |")
' "$wall"
