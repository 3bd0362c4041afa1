"""ctest's timing, summarised: reads the output of `ctest` (scripts/test.sh prints it; CI
keeps it) and prints a markdown table of the slowest tests and of the time by suite (the
gtest suite, or the ctest name for a plain test), with the totals.

usage: python3 bench/ctest_times.py CTEST_OUTPUT [TOP]   (TOP: how many slowest tests, default 25)
       python3 bench/ctest_times.py CTEST_OUTPUT --costs FILE
The second form writes the tests' times in ctest's cost-data format (tests/ctest_costs.txt,
which scripts/test.sh gives a build that has none, so a first run starts its longest tests
first instead of in declared order).
"""
import collections
import re
import sys

LINE = re.compile(r"Test +#\d+: (\S+) .*?(Passed|\*\*\*Failed|Failed|\*\*\*Timeout|Not Run|\*\*\*Skipped)?\s+([\d.]+) sec")


def suite(name):
    name = name.split("/", 1)[1] if "/" in name.split(".")[0] else name  # Family/Suite.Test -> Suite.Test
    return name.split(".")[0]


def write_costs(tests, path):
    # ctest reads a line as NAME RUNS COST, split at spaces: a name with a space cannot be read.
    with open(path, "w") as f:
        for n, s in sorted(tests.items(), key=lambda kv: -kv[1]):
            f.write(f"{n} 1 {s:.2f}\n")
        f.write("---\n")


def main():
    top = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] != "--costs" else 25
    tests = {}
    wall = None
    for line in open(sys.argv[1], errors="replace"):
        m = LINE.search(line)
        if m:
            tests[m.group(1)] = float(m.group(3))
        w = re.search(r"Total Test time \(real\) = +([\d.]+) sec", line)
        if w:
            wall = float(w.group(1))
    if len(sys.argv) > 3 and sys.argv[2] == "--costs":
        return write_costs(tests, sys.argv[3])
    by = collections.defaultdict(lambda: [0, 0.0])
    for n, s in tests.items():
        by[suite(n)][0] += 1
        by[suite(n)][1] += s
    total = sum(tests.values())
    print(f"{len(tests)} tests, {total:.0f} test-seconds" + (f", {wall:.0f} s of wall time" if wall else ""))
    print()
    print("| suite | tests | seconds | share |")
    print("| --- | --- | --- | --- |")
    for k, (n, s) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"| {k} | {n} | {s:.0f} | {100 * s / total:.1f}% |")
    print()
    print(f"The {top} slowest:")
    print()
    print("| test | seconds |")
    print("| --- | --- |")
    for n, s in sorted(tests.items(), key=lambda kv: -kv[1])[:top]:
        print(f"| {n} | {s:.1f} |")


if __name__ == "__main__":
    main()
