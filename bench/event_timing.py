"""The bench probes' clock: the median of a function's CUDA-event times (ms), after warm calls."""
import os
import time

import torch

# Where a probe runs: CUDA, or the CPU (PKB_PROBE_DEVICE=cpu) only to smoke-test it.
DEVICE = os.environ.get("PKB_PROBE_DEVICE", "cuda")


def median_ms(fn, reps=20, warm=1):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def host_median_ms(fn, reps=20, warm=1):
    """median_ms by time.perf_counter, for a probe's smoke test on the CPU (no CUDA events there)."""
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        a = time.perf_counter()
        fn()
        times.append((time.perf_counter() - a) * 1e3)
    return sorted(times)[len(times) // 2]


def print_steps(steps, clock=median_ms, **timing):
    """A probe's markdown table: each (name, fn) step's median time by clock (median_ms unless told)."""
    print("| step | ms |\n| --- | --- |")
    for name, fn in steps:
        print(f"| {name} | {clock(fn, **timing):.3f} |")


def runnable(steps):
    """The (name, fn) steps that run once here; each that raises (an op this torch build lacks
    on the device, say) is left out with a line saying why, so that one does not end the table."""
    kept = []
    for name, fn in steps:
        try:
            fn()
            kept.append((name, fn))
        except (RuntimeError, NotImplementedError, TypeError) as e:
            print(f"left out: {name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return kept


def print_probe(title, steps, alternatives, label):
    """A probe's title (with the device's name), then the table of its steps and of each
    alternative (name, fn) that runs here, named `label` + its name; returns those."""
    print(f"{title}, {torch.cuda.get_device_name() if DEVICE == 'cuda' else 'CPU smoke test'}\n")
    kept = runnable(alternatives)
    print_steps(steps + [(label + name, fn) for name, fn in kept], clock=median_ms if DEVICE == "cuda" else host_median_ms)
    return kept
