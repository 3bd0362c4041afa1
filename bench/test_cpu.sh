#!/usr/bin/env bash
# Each test's CPU time, beside its wall time: ctest (the tests named by REGEX, else all) with
# every test executable run under /usr/bin/time (CMake's CROSSCOMPILING_EMULATOR, set for
# this run and taken off again after it), then the TOP (default 25) tests by wall time as a
# markdown table, and the sums. CPU counts the test's whole process tree (the pkb commands it
# runs, their ranks); the Python checks' server and the tests ctest runs through a script
# (slurm_sweep) are outside it. Run in a build with the tests, on a machine doing nothing else.
#
#   bench/test_cpu.sh BUILD_DIR [REGEX] [TOP]
set -euo pipefail
build=$(cd "${1:?usage: bench/test_cpu.sh BUILD_DIR [REGEX] [TOP]}" && pwd)
regex=${2:-} top=${3:-25}
work=$(mktemp -d /tmp/pkb-test-cpu.XXXXXX)
restore() {
  cmake -U CMAKE_CROSSCOMPILING_EMULATOR "$build" >/dev/null 2>&1 && cmake --build "$build" -j "$(nproc)" >/dev/null 2>&1
  rm -rf "$work"
}
trap restore EXIT
# The wrapper: one line a test (user s, system s, wall s, the gtest filter or the command).
cat >"$work/wrap.sh" <<EOF
#!/bin/bash
name=\$(printf '%s\n' "\$@" | sed -n 's/^--gtest_filter=//p')
exec /usr/bin/time -a -o "$work/times.txt" -f "%U %S %e \${name:-\$*}" "\$@"
EOF
chmod +x "$work/wrap.sh"
# The tests' lists are made again with the wrapper (gtest_discover_tests runs each executable).
cmake -DCMAKE_CROSSCOMPILING_EMULATOR="$work/wrap.sh" "$build" >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null
: >"$work/times.txt"
start=$(date +%s)
(cd "$build" && ctest -j "$(($(nproc) + 1))" --timeout 900 ${regex:+-R "$regex"} >"$work/ctest.log" 2>&1) || true
wall=$(($(date +%s) - start))
grep -E "tests passed|tests failed" "$work/ctest.log" || true
python3 - "$work/times.txt" "$wall" "$top" <<'EOF'
import sys
rows = []
for line in open(sys.argv[1]):
    f = line.split(maxsplit=3)
    if len(f) == 4 and "--gtest_list_tests" not in f[3]:
        rows.append((float(f[2]), float(f[0]) + float(f[1]), float(f[0]), float(f[1]), f[3].strip()))
wall, top = int(sys.argv[2]), int(sys.argv[3])
print(f"{len(rows)} tests in {wall} s of wall: {sum(r[1] for r in rows):.0f} CPU-s "
      f"({sum(r[2] for r in rows):.0f} user, {sum(r[3] for r in rows):.0f} system), "
      f"{sum(r[0] for r in rows):.0f} test-seconds of wall\n")
print("| test | wall s | CPU s |\n| --- | ---: | ---: |")
for w, cpu, _, _, name in sorted(rows, reverse=True)[:top]:
    print(f"| {name} | {w:.1f} | {cpu:.1f} |")
EOF
