"""Do two of the machine's CPUs share a core underneath (the lent H200 is a VM)?

Issue 35: a rank's host runs ATen's allocator and dispatch either at full speed or about 2x
slower, switching between problems within one process (bench/results/h200-2026-12-04, call
2: alloc 0.9 or 1.8 us, op 5 or 7 us), while a serial arithmetic loop keeps its speed: the
signature of a busy hyperthread sibling, which the guest cannot see (lscpu says one thread a
core). This times the same host work (a small CUDA tensor made and freed; an in-place add;
a serial arithmetic loop) on a thread pinned to CPU A, alone and then with a process
spinning on each other CPU B in turn. A B that slows A's work is its sibling.

    python3 bench/cpu_sibling_probe.py [A ...]      (default: CPUs 0 and 1)
    python3 bench/cpu_sibling_probe.py --matrix     (every A against every B, the allocator only)

Prints a markdown table: for each A and B, each work's median (us) and its ratio to alone;
with --matrix one row an A: its allocator time alone, then the ratio with the spinner on
each B. Needs CUDA (the allocator and add are torch's CUDA ones).
"""
import os
import statistics
import subprocess
import sys
import time

import torch


# The spinner: a plain interpreter (no torch to import) pinned to its CPU, busy until killed.
SPIN = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nx = 0\nwhile True:\n    x = (x * 6364136223846793005 + 1) & 0xFFFFFFFFFFFFFFFF\n"


def timed(fn, reps=15, n=200):
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(out)


def measure(x):
    alloc = timed(lambda: torch.empty(256, device="cuda"))
    op = timed(lambda: x.add_(1))
    torch.cuda.synchronize()

    def arith():
        y = 1
        for _ in range(100):
            y = (y * 2862933555777941757 + 3037000493) & 0xFFFFFFFFFFFFFFFF
        return y

    return alloc, op, timed(arith, n=50)


def main():
    cpus = sorted(os.sched_getaffinity(0))
    x = torch.zeros(1, device="cuda")
    measure(x)  # warm: the allocator's pool, the kernel looked up
    print(f"{len(cpus)} CPUs, {torch.cuda.get_device_name()}\n")
    if sys.argv[1:] == ["--matrix"]:
        return matrix(cpus)
    targets = [int(a) for a in sys.argv[1:]] or cpus[:2]
    print("| A | spinner on | alloc us | x alone | add_ us | x alone | arithmetic us | x alone |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for a in targets:
        os.sched_setaffinity(0, {a})
        alone = measure(x)
        print(f"| {a} | none | {alone[0]:.2f} | 1 | {alone[1]:.2f} | 1 | {alone[2]:.2f} | 1 |")
        for b in cpus:
            if b == a:
                continue
            p = subprocess.Popen([sys.executable, "-c", SPIN, str(b)])
            time.sleep(0.1)
            m = measure(x)
            p.kill()
            p.wait()
            ratios = [m[k] / alone[k] for k in range(3)]
            mark = " **" if max(ratios[:2]) > 1.3 else ""
            print(f"| {a} | {b}{mark} | {m[0]:.2f} | {ratios[0]:.2f} | {m[1]:.2f} | {ratios[1]:.2f} | {m[2]:.2f} | {ratios[2]:.2f} |")


def matrix(cpus):
    alloc = lambda: timed(lambda: torch.empty(256, device="cuda"), reps=9, n=200)
    print("| A | alone us | " + " | ".join(f"B={b}" for b in cpus) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in cpus) + " |")
    for a in cpus:
        os.sched_setaffinity(0, {a})
        alone = alloc()
        row = []
        for b in cpus:
            if b == a:
                row.append("-")
                continue
            p = subprocess.Popen([sys.executable, "-c", SPIN, str(b)])
            time.sleep(0.05)
            row.append(f"{alloc() / alone:.2f}")
            p.kill()
            p.wait()
        print(f"| {a} | {alone:.2f} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
