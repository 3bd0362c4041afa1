#!/usr/bin/env bash
# What pkb's sandbox (Landlock + seccomp, entered before the candidate loads) costs a
# candidate's timed calls: the same examples evaluated with the sandbox and with
# --no-sandbox, alternately (on, off, on, off, ... so drift in the machine's load hits both
# sides), ROUNDS times each. Prints a markdown table: the median over the rounds of each
# evaluation's median call time, on and off, and their ratio.
#
#   bench/sandbox/run.sh [PKB] [DEVICE] [W] [ROUNDS]      (defaults: build/pkb cpu 4 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
PKB=${1:-build/pkb} DEVICE=${2:-cpu} W=${3:-4} ROUNDS=${4:-3}
if [ "$DEVICE" = cuda ]; then
  examples="coll_allreduce:solutions_cuda/coll_allreduce.cu tp_gemm_allgather:solutions_cuda/tp_gemm_allgather.cu
            coll_allreduce:solutions_triton/coll_allreduce.py"
else
  examples="coll_allreduce:solutions_cpu/coll_allreduce.cpp coll_allgather:solutions_cpu/coll_allgather.cpp
            coll_allreduce:solutions_triton/cpu/coll_allreduce.py"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| problem | candidate | device | W | sandbox on: median us | off: median us | on / off | verdicts |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for e in $examples; do
  p=${e%%:*} s=${e#*:}
  for k in $(seq "$ROUNDS"); do
    for mode in on off; do
      flag=""
      [ $mode = off ] && flag=--no-sandbox
      "$PKB" eval -p "$p" -s "$s" --device "$DEVICE" -w "$W" $flag --json "$out/$mode-$k.json" >/dev/null 2>&1 || true
    done
  done
  python3 - "$out" "$p" "$s" "$DEVICE" "$W" "$ROUNDS" <<'PY'
import json, statistics, sys
out, p, s, dev, w, rounds = sys.argv[1:]
med, verdicts = {}, set()
for mode in ("on", "off"):
    xs = []
    for k in range(1, int(rounds) + 1):
        try:
            d = json.load(open(f"{out}/{mode}-{k}.json"))
        except (OSError, ValueError):
            verdicts.add("no result")
            continue
        verdicts.add(d["verdict"])
        m = ((d.get("timing") or {}).get("candidate") or {}).get("median_us")
        if m:
            xs.append(m)
    med[mode] = statistics.median(xs) if xs else None
on, off = med["on"], med["off"]
f = lambda v: f"{v:.1f}" if v else "-"
ratio = f"{on / off:.3f}" if on and off else "-"
print(f"| {p} | {s} | {dev} | {w} | {f(on)} | {f(off)} | {ratio} | {', '.join(sorted(verdicts))} |")
PY
done
