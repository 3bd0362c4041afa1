"""The bench probes' clock: the median of a function's CUDA-event times (ms), after warm calls."""
import torch


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


def print_steps(steps, **timing):
    """A probe's markdown table: each (name, fn) step's median_ms."""
    print("| step | ms |\n| --- | --- |")
    for name, fn in steps:
        print(f"| {name} | {median_ms(fn, **timing):.3f} |")
