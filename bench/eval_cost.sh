#!/usr/bin/env bash
# pkb's own cost: the wall time of `pkb eval --trials 100` with timing (500 warm-up and 100
# timed calls of candidate and reference) on one problem, split into start-up (pkb's own
# start, the device probe), compile, bootstrap (rank processes up, libtorch loaded; the
# candidate ranks' includes the judges' reference timing), the reference timing itself,
# init (communicators, heap, candidate loaded), trials, and timing (with the checks of
# every timed call). Runs twice: with an empty cache, then warm (the build and the
# reference timing come from the cache).
#
#   bench/eval_cost.sh [PKB] [DEVICE] [W] [PROBLEM] [SOLUTION]    (defaults: build/pkb cpu 4 coll_allreduce solutions_cpu/...)
# Prints a markdown table; bench/results/ keeps the committed runs.
set -euo pipefail
cd "$(dirname "$0")/.."
PKB=${1:-build/pkb} DEVICE=${2:-cpu} W=${3:-4} PROBLEM=${4:-coll_allreduce}
SOLUTION=${5:-solutions_cpu/$PROBLEM.cpp}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
echo "| run | verdict | wall s | start-up | compile | bootstrap | reference timing | init | trials | timing |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for run in "cold cache" "warm cache"; do
  PKB_CACHE_DIR=$cache "$PKB" eval -p "$PROBLEM" -s "$SOLUTION" --device "$DEVICE" -w "$W" --seed 1 \
    --json "$cache/r.json" >/dev/null 2>&1 || true
  python3 - "$cache/r.json" "$run" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); c = d["costs_s"]
print(f"| {sys.argv[2]} | {d['verdict']} | {d['wall_s']:.2f} | {c['startup']:.2f} | {c['compile']:.2f} | "
      f"{c['bootstrap']:.2f} | {c.get('reference_timing', 0):.2f} | {c['init']:.2f} | {c['trials']:.2f} | {c['timing']:.2f} |")
PY
done
