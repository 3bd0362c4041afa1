"""The side-by-side busbw table: pkb's references (and example candidates) from pkb eval's
JSON lines (scripts/gpu-check.sh stage busbw) against torch.distributed's own collectives
(bench/torch_collectives.py), per problem and message size.

usage: busbw_table.py RESULTS.jsonl TORCH.json  > table.md
"""
import json
import sys


def main():
    pkb = {}
    for line in open(sys.argv[1]):
        r = json.loads(line)
        if r.get("busbw_gbps") is None or not r.get("step", "").startswith("busbw "):
            continue
        _, problem, mib, _, w = r["step"].split()[:5]
        pkb[(problem, int(mib), int(w.split("=")[1]))] = r
    torch = {(t["problem"], t["mib"], t["world"]): t for t in json.load(open(sys.argv[2]))}
    print("| problem | MiB | W | torch.distributed GB/s | pkb reference GB/s | ref / torch | example candidate GB/s | speedup |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for key in sorted(set(pkb) | set(torch)):
        t, p = torch.get(key), pkb.get(key)
        tb = f"{t['busbw_gbps']:.1f}" if t else ""
        rb = f"{p['busbw_gbps']['reference']:.1f}" if p else ""
        cb = f"{p['busbw_gbps']['candidate']:.1f}" if p else ""
        ratio = f"{p['busbw_gbps']['reference'] / t['busbw_gbps']:.3f}" if p and t else ""
        sp = f"{p['speedup']:.2f}x" if p and p.get("speedup") else (p["verdict"] if p else "")
        print(f"| {key[0]} | {key[1]} | {key[2]} | {tb} | {rb} | {ratio} | {cb} | {sp} |")


main()
