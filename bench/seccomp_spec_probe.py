"""Does a seccomp filter slow a thread's host code down (the kernel's speculation mitigations)?

Issue 35: the candidate rank's host takes longer over the same ATen calls than the judge's,
every op alike (`pkb eval --profile-ops`, bench/results/h200-2026-12-04 session 11), while a
fixed pure-CPU loop runs alike on both sides. The candidate rank runs under seccomp
(src/rank/sandbox.cpp); the judges do not. Unless a filter is installed with
SECCOMP_FILTER_FLAG_SPEC_ALLOW, Linux may force speculation mitigations on a seccomp'd
task (Speculative Store Bypass Disable, indirect branch protection), depending on the
kernel's `spec_store_bypass_disable=` and `spectre_v2_user=` defaults. This checks on the
machine itself, with plain torch and no pkb: child processes pinned to one CPU, each set up
one way, time the same launch-bound sequence (40 small CUDA ops, host time to enqueue) and a
dispatcher-bound CPU sequence (200 tiny ATen ops on the CPU), interleaved block by block so
the machine's drift hits every way alike:

  plain         nothing
  seccomp       an allow-everything seccomp filter, default flags (as pkb's sandbox was)
  spec_allow    the same filter with SECCOMP_FILTER_FLAG_SPEC_ALLOW
  ssbd          no filter; Speculative Store Bypass disabled with prctl

Prints the kernel's vulnerability lines, each child's Speculation_* status lines and a table
of medians (us). Run on a GPU machine:
  python3 bench/seccomp_spec_probe.py [--rounds 8] [--reps 50] [--pin CPU] [--no-cuda]
"""

import argparse
import ctypes
import os
import statistics
import struct
import sys
import time

MODES = ["plain", "seccomp", "spec_allow", "ssbd"]

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SPECULATION_CTRL = 53
PR_SPEC_STORE_BYPASS = 0
PR_SPEC_DISABLE = 4
SYS_SECCOMP = 317  # x86_64
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_SPEC_ALLOW = 1 << 2
BPF_RET_K = 0x06
SECCOMP_RET_ALLOW = 0x7FFF0000


def kernel_facts():
    print(f"kernel: {os.uname().release}")
    d = "/sys/devices/system/cpu/vulnerabilities"
    for name in ("spec_store_bypass", "spectre_v2", "spectre_v1", "retbleed", "mmio_stale_data"):
        try:
            with open(os.path.join(d, name)) as f:
                print(f"  {name}: {f.read().strip()}")
        except OSError:
            pass


def spec_status():
    with open("/proc/self/status") as f:
        return "; ".join(l.strip() for l in f if l.startswith("Speculation"))


def set_up(mode):
    libc = ctypes.CDLL(None, use_errno=True)
    if mode == "ssbd":
        if libc.prctl(PR_SET_SPECULATION_CTRL, PR_SPEC_STORE_BYPASS, PR_SPEC_DISABLE, 0, 0) != 0:
            return f"prctl failed: errno {ctypes.get_errno()}"
    if mode in ("seccomp", "spec_allow"):
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"no_new_privs failed: errno {ctypes.get_errno()}"
        insn = ctypes.create_string_buffer(struct.pack("HBBI", BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
        prog = ctypes.create_string_buffer(struct.pack("HxxxxxxP", 1, ctypes.addressof(insn)))
        flags = SECCOMP_FILTER_FLAG_SPEC_ALLOW if mode == "spec_allow" else 0
        libc.syscall.restype = ctypes.c_long
        if libc.syscall(ctypes.c_long(SYS_SECCOMP), ctypes.c_long(SECCOMP_SET_MODE_FILTER),
                        ctypes.c_long(flags), prog) != 0:
            return f"seccomp failed: errno {ctypes.get_errno()}"
    return ""


def child(mode, rfd, wfd, pin, use_cuda):
    if pin is not None:
        os.sched_setaffinity(0, {pin})
    err = set_up(mode)
    import torch  # after the filter, as a candidate rank loads its code under it

    torch.set_num_threads(1)
    dev = "cuda" if use_cuda else "cpu"
    x = torch.zeros(256, device=dev)
    c = torch.zeros(16)
    out = os.fdopen(wfd, "w", buffering=1)
    out.write(f"{mode}\t{err or spec_status()}\n")

    def gpu_call():
        if use_cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(10):
            y = x.add(1.0)
            y.mul_(0.5)
            z = y.sum()
            x.copy_(y)
        return (time.perf_counter() - t0) * 1e6, z

    def cpu_call():
        t0 = time.perf_counter()
        for _ in range(50):
            d = c.add(1.0)
            d.mul_(0.5)
            e = d.view(4, 4).t()
            d = e.contiguous()
        return (time.perf_counter() - t0) * 1e6, d

    for _ in range(30):
        gpu_call(), cpu_call()
    inp = os.fdopen(rfd)
    for line in inp:
        reps = int(line)
        g = [gpu_call()[0] for _ in range(reps)]
        k = [cpu_call()[0] for _ in range(reps)]
        out.write(f"{statistics.median(g)}\t{statistics.median(k)}\n")
    os._exit(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--pin", type=int, default=None)
    ap.add_argument("--no-cuda", action="store_true")
    a = ap.parse_args()
    kernel_facts()
    kids = {}
    for mode in MODES:
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(to_w)
            os.close(from_r)
            child(mode, to_r, from_w, a.pin, not a.no_cuda)
        os.close(to_r)
        os.close(from_w)
        kids[mode] = (pid, os.fdopen(to_w, "w", buffering=1), os.fdopen(from_r))
    for mode, (_, _, rd) in kids.items():
        print(f"  {rd.readline().strip()}")
    res = {m: ([], []) for m in MODES}
    for r in range(a.rounds):
        order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
        for mode in order:
            _, wr, rd = kids[mode]
            wr.write(f"{a.reps}\n")
            g, k = map(float, rd.readline().split())
            res[mode][0].append(g)
            res[mode][1].append(k)
    for _, wr, _ in kids.values():
        wr.close()
    for pid, _, _ in kids.values():
        os.waitpid(pid, 0)
    base_g = statistics.median(res["plain"][0])
    base_k = statistics.median(res["plain"][1])
    print(f"pin {a.pin}, {a.rounds} rounds x {a.reps} reps, median of the rounds' medians, us (x plain):")
    print(f"| way | {'cuda' if not a.no_cuda else 'cpu'} 40 ops, host | cpu 200 ATen ops |")
    print("| --- | --- | --- |")
    for m in MODES:
        g, k = statistics.median(res[m][0]), statistics.median(res[m][1])
        print(f"| {m} | {g:.1f} ({g / base_g:.2f}) | {k:.1f} ({k / base_k:.2f}) |")


if __name__ == "__main__":
    sys.exit(main())
