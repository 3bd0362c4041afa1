"""torch.distributed's own collectives over NCCL, timed the way pkb times a call, for the
side-by-side table of bench/busbw_table.py (pkb's references should come within 5% of torch's).

Run one process per GPU:
    python3 -m torch.distributed.run --nproc_per_node 2 bench/torch_collectives.py \
        --mib 1,16,256,1024 --out torch_busbw.json

Sizes follow nccl-tests and pkb's busbw stage: the message is per rank for all-reduce,
broadcast and reduce, and in total for all-gather, reduce-scatter and all-to-all; bf16 rows
of 1024. Each call: L2 flushed, then CUDA events around the call on the current stream;
per call the slowest rank; the median of 100 calls after 20 warm-up calls.
"""
import argparse
import json
import os

import torch
import torch.distributed as dist

BUS = {  # nccl-tests' bus factors
    "all_reduce": lambda w: 2 * (w - 1) / w,
    "all_gather": lambda w: (w - 1) / w,
    "reduce_scatter": lambda w: (w - 1) / w,
    "all_to_all": lambda w: (w - 1) / w,
    "broadcast": lambda w: 1.0,
}
PROBLEM = {"all_reduce": "coll_allreduce", "all_gather": "coll_allgather", "reduce_scatter": "coll_reducescatter",
           "all_to_all": "coll_alltoall", "broadcast": "coll_broadcast"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", default="1,16,256,1024")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for op in BUS:
        for mib in [int(m) for m in a.mib.split(",")]:
            elems = mib << 19  # bf16 elements in mib MiB
            if op in ("all_gather", "reduce_scatter", "all_to_all"):
                elems //= world  # the whole message is mib MiB
            x = torch.randn(elems, dtype=torch.bfloat16, device="cuda")
            if op == "all_reduce":
                call = lambda: dist.all_reduce(x)
            elif op == "all_gather":
                y = torch.empty(elems * world, dtype=x.dtype, device="cuda")
                call = lambda: dist.all_gather_into_tensor(y, x)
            elif op == "reduce_scatter":
                xs = torch.randn(elems * world, dtype=x.dtype, device="cuda")
                y = torch.empty(elems, dtype=x.dtype, device="cuda")
                call = lambda: dist.reduce_scatter_tensor(y, xs)
            elif op == "all_to_all":
                y = torch.empty_like(x)
                call = lambda: dist.all_to_all_single(y, x)
            else:
                call = lambda: dist.broadcast(x, 0)
            for _ in range(a.warmup):
                call()
            times = []
            for _ in range(a.iters):
                flush.zero_()
                dist.barrier()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                call()
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e) * 1000)
            t = torch.tensor(times, device="cuda")
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            us = t.median().item()
            data = mib << 20
            rows.append({"op": op, "problem": PROBLEM[op], "mib": mib, "world": world, "median_us": us,
                         "busbw_gbps": data / (us * 1e3) * BUS[op](world)})
            if rank == 0:
                print(f"{op:15s} {mib:5d} MiB  {us:9.1f} us  {rows[-1]['busbw_gbps']:6.1f} GB/s", flush=True)
    if rank == 0:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)
    dist.destroy_process_group()


main()
