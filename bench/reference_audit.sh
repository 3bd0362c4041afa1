#!/usr/bin/env bash
# The reference audit: every problem's reference alone at --size large on one GPU
# (W = 1), timed by `pkb dryrun --time` (warm-up and timed calls of the reference, no
# candidate), one problem at a time, each under its own deadline and all under a total time
# budget; a problem that fails, crashes or runs out of time is recorded and the audit goes
# on. bench/reference_audit_table.py turns the JSON files into the markdown table of each
# reference's median, roofline bound, fraction of it, limiter and peak memory
# (bench/results/reference_audit_h200.md holds the H200 run).
#
#   bench/reference_audit.sh [PKB] [TABLE]      (defaults: build/pkb bench/results/reference_audit_h200.md)
# Environment (defaults): BUDGET_S=1500 (the whole audit), PER_PROBLEM_S=240 (one problem's
# deadline, less when the budget has less left), MIN_LEFT_S=30 (below it the remaining
# problems are listed as not run), WARMUP=3, ITERS=10, SIZE=large, ONLY (a regex of problems), SKIP (a regex of problems left out),
# EXTRA (more dryrun flags, e.g. --hardware h200_1), OUT (a folder to keep every problem's
# <problem>.json and .log and status.tsv in; by default a temporary one, removed at the end).
# Writes the markdown table to TABLE and prints it.
# A device call of at most 10 minutes does not hold all 87 problems at the large preset: split
# them over calls with ONLY (e.g. '^(coll|cp|dp|ep)_' and '^(fsdp|gnn|misc|pp|rec|sci|sp|tp)_',
# each with BUDGET_S=540 PER_PROBLEM_S=90 and its own TABLE), then join the tables.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PKB=${1:-build/pkb}
TABLE=${2:-bench/results/reference_audit_h200.md}
BUDGET_S=${BUDGET_S:-1500} PER_PROBLEM_S=${PER_PROBLEM_S:-240} MIN_LEFT_S=${MIN_LEFT_S:-30}
WARMUP=${WARMUP:-3} ITERS=${ITERS:-10} SIZE=${SIZE:-large}
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
else
  OUT=$(mktemp -d)
  trap 'rm -rf "$OUT"' EXIT
fi
: >"$OUT/status.tsv"

problems=$("$PKB" list | awk 'NR > 1 && $2 ~ /^[a-z]+_/ && $2 !~ /^test_/ {print $2}' | grep -E "${ONLY:-.}" | { [ -n "${SKIP:-}" ] && grep -Ev "$SKIP" || cat; })
if [ -z "$problems" ]; then
  echo "reference_audit: no problems from '$PKB list' (ONLY='${ONLY:-}'); build pkb first" >&2
  exit 2
fi

start=$(date +%s)
for p in $problems; do
  left=$((BUDGET_S - ($(date +%s) - start)))
  if [ "$left" -lt "$MIN_LEFT_S" ]; then
    printf '%s\tbudget\t0\n' "$p" >>"$OUT/status.tsv"
    continue
  fi
  limit=$((left < PER_PROBLEM_S ? left : PER_PROBLEM_S))
  rm -f "$OUT/$p.json"
  t0=$(date +%s)
  # pkb's own phase deadlines stay as they are; `timeout` bounds the whole run (and
  # signals pkb, which ends its ranks).
  timeout --signal=INT --kill-after=20 "$limit" \
    "$PKB" dryrun -p "$p" -w 1 --size "$SIZE" --trials 1 --time --warmup "$WARMUP" --iters "$ITERS" \
    --json "$OUT/$p.json" ${EXTRA:-} >"$OUT/$p.log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\n' "$p" "$rc" "$(($(date +%s) - t0))" >>"$OUT/status.tsv"
  echo "$p: exit $rc in $(($(date +%s) - t0)) s" >&2
done

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
{
  echo "# Reference audit: every reference alone at --size $SIZE, W = 1"
  echo
  echo "\`bench/reference_audit.sh\` on ${gpu:-this machine},"
  echo "$(date -u +%Y-%m-%d), pkb $(git rev-parse --short HEAD 2>/dev/null): \`pkb dryrun --time\` with $WARMUP warm-up and $ITERS"
  echo "timed calls, 1 trial, at most ${PER_PROBLEM_S} s a problem and ${BUDGET_S} s in all. The bound is the"
  echo "roofline of the problem's spec on pkb's hardware profile; fraction = bound / median."
  echo
  python3 bench/reference_audit_table.py "$OUT"
} | tee "$TABLE"
