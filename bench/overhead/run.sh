#!/usr/bin/env bash
# pkb's own cost of a Python candidate: an empty pkb_run in Python (empty.py) timed against
# an empty C one (empty.cu on CUDA, empty.cpp on the CPU device), on
# tests/candidates/problems/test_empty.toml, with pkb eval's full protocol (500 warm-up and
# 100 timed calls; on CUDA, event time on ctx->stream, which holds the host's gap between
# the events when nothing else is queued). The difference is what the Python path adds to
# every call: the tensor views, pkb.Ctx, the call through the interpreter.
#
#   bench/overhead/run.sh [PKB] [DEVICE] [W]      (defaults: build/pkb cpu 2)
# Needs pkb's tests built (the gallery's reference library). Prints a markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
PKB=${1:-build/pkb} DEVICE=${2:-cpu} W=${3:-2}
native=bench/overhead/empty.cpp
[ "$DEVICE" = cuda ] && native=bench/overhead/empty.cu
refs=$(dirname "$PKB")/tests/libpkb_gallery_refs.so
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| candidate | device | W | verdict | median us | min us | IQR us |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for s in "$native" bench/overhead/empty.py; do
  "$PKB" --problem-dir tests/candidates/problems --reference-lib "$refs" eval -p test_empty -s "$s" \
    --device "$DEVICE" -w "$W" --json "$out/r.json" >/dev/null 2>&1 || true
  python3 - "$out/r.json" "$s" "$DEVICE" "$W" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = (d.get("timing") or {}).get("candidate") or {}
f = lambda k: f"{t[k]:.2f}" if k in t else "-"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {d['verdict']} | {f('median_us')} | {f('min_us')} | {f('iqr_us')} |")
PY
done
