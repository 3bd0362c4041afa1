"""Does a thread that waited before a launch-bound call enqueue it slower than one that spun?

Issue 35: the candidate rank's thread sleeps on a socket until its judge has written the
call's inputs, while the judge's reference loop spins in the driver's synchronise right up to
its call; the candidate's calls take longer on the host. This times the same launch-bound
sequence of torch ops (and, apart, a fixed pure-CPU loop) after each way of waiting,
interleaved call by call in one process, so the machine's drift hits every way alike:

  spin_sync   torch.cuda.synchronize() just before (the judge's reference loop)
  sleep       synchronize, then sleep 200 us (the thread leaves its CPU)
  pipe        synchronize, then a blocking round trip through a partner process
              (the candidate rank asking its judge for the call's inputs)
  pipe_spin   the same round trip, polled without sleeping
  busy        synchronize, then spin 200 us on the CPU
  behind      synchronize, then ~1 ms of GPU sleep on the stream: the launches queue behind
              work (the judges' reference calls queue behind the L2 eviction)
  held        synchronize, then the stream made to wait on an event of a side stream that
              sleeps ~1 ms: held by a dependency, as a candidate rank's stream is held on
              its `go` flag while its host enqueues the call (jobs/gate.hpp)

Prints the machine's CPU facts and a table of medians (us). Run on a GPU machine:
  python3 bench/host_wake_probe.py [--reps 300] [--pin CPU]
"""

import argparse
import os
import random
import statistics
import sys
import time


def machine_facts():
    def read(p):
        try:
            with open(p) as f:
                return f.read().strip()
        except OSError:
            return "?"

    facts = {
        "cpus": os.cpu_count(),
        "cpuidle_driver": read("/sys/devices/system/cpu/cpuidle/current_driver"),
        "cpuidle_states": " ".join(
            read(f"/sys/devices/system/cpu/cpu0/cpuidle/state{i}/name") for i in range(6)
            if os.path.exists(f"/sys/devices/system/cpu/cpu0/cpuidle/state{i}")),
        "governor": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "perf_event_paranoid": read("/proc/sys/kernel/perf_event_paranoid"),
        "pmu": " ".join(sorted(os.listdir("/sys/bus/event_source/devices")))
        if os.path.isdir("/sys/bus/event_source/devices") else "?",
        "siblings_cpu0": read("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list"),
        "numa_nodes": len([d for d in os.listdir("/sys/devices/system/node") if d.startswith("node")])
        if os.path.isdir("/sys/devices/system/node") else "?",
        "haltpoll": read("/sys/module/haltpoll/parameters/guest_halt_poll_ns"),
    }
    for k, v in facts.items():
        print(f"  {k}: {v}")


def partner(rfd, wfd):
    # Echoes each byte back at once: the judge's reply, without its work.
    while True:
        b = os.read(rfd, 1)
        if not b:
            os._exit(0)
        os.write(wfd, b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--pin", type=int, default=-1, help="pin this process to one CPU")
    a = ap.parse_args()
    print("machine:")
    machine_facts()

    to_p, from_main = os.pipe()
    to_main, from_p = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(from_main)
        os.close(to_main)
        partner(to_p, from_p)
    os.close(to_p)
    os.close(from_p)
    if a.pin >= 0:
        os.sched_setaffinity(0, {a.pin})

    import torch

    dev = torch.device("cuda")
    x = torch.zeros(4096, device=dev)
    m = torch.randn(64, 64, device=dev)

    def gpu_work():  # ~40 launches, each a few us of host work: launch-bound
        y = x
        for _ in range(30):
            y = y * 1.0001 + 0.5
        for _ in range(10):
            torch.mm(m, m)

    def cpu_work():  # fixed pure-CPU work, no driver
        s = 0
        for i in range(3000):
            s += i * i
        return s

    def busy(us):
        t = time.perf_counter()
        while (time.perf_counter() - t) * 1e6 < us:
            pass

    def pipe_wait(spin):
        os.write(from_main, b"x")
        if spin:
            os.set_blocking(to_main, False)
            while True:
                try:
                    if os.read(to_main, 1):
                        break
                except BlockingIOError:
                    pass
            os.set_blocking(to_main, True)
        else:
            os.read(to_main, 1)

    side = torch.cuda.Stream()
    sleep_cycles = int(2e6)  # ~1 ms at the H200's ~1.98 GHz

    def behind():
        torch.cuda._sleep(sleep_cycles)

    def held():
        with torch.cuda.stream(side):
            torch.cuda._sleep(sleep_cycles)
            ev = torch.cuda.Event()
            ev.record(side)
        torch.cuda.current_stream().wait_event(ev)

    waits = {
        "spin_sync": lambda: None,
        "sleep": lambda: time.sleep(200e-6),
        "pipe": lambda: pipe_wait(False),
        "pipe_spin": lambda: pipe_wait(True),
        "busy": lambda: busy(200),
        "behind": behind,
        "held": held,
    }
    works = {"gpu": gpu_work, "cpu": cpu_work}
    for _ in range(50):
        gpu_work()
        cpu_work()
    torch.cuda.synchronize()
    got = {(w, k): [] for w in waits for k in works}
    keys = list(got)
    for _ in range(a.reps):
        random.shuffle(keys)
        for wait, work in keys:
            torch.cuda.synchronize()
            waits[wait]()
            t = time.perf_counter_ns()
            works[work]()
            got[(wait, work)].append((time.perf_counter_ns() - t) / 1e3)
    torch.cuda.synchronize()
    os.close(from_main)
    os.waitpid(pid, 0)
    print(f"pin {a.pin}, {a.reps} reps each, median [p25, p75] us:")
    print("| wait | gpu (40 launches) | cpu (fixed loop) |")
    print("| --- | --- | --- |")
    for wait in waits:
        cells = []
        for work in works:
            v = sorted(got[(wait, work)])
            q = statistics.quantiles(v, n=4)
            cells.append(f"{statistics.median(v):.1f} [{q[0]:.1f}, {q[2]:.1f}]")
        print(f"| {wait} | {cells[0]} | {cells[1]} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
